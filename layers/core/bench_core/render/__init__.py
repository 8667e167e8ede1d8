"""Rendering: badges, font widths, charts, the OG card, number formatting, HTTP caching."""
