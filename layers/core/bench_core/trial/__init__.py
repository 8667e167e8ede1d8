"""The `/try` trial: Bench without signing up."""
