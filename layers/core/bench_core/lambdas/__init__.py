"""Plain Lambda handlers with no web framework: the badge, the WebSocket routes, workflow steps."""
