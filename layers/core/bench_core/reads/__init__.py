"""Read models: what pages, the JSON API, MCP and the live feed show, through the privacy gate."""
