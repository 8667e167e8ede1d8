"""The public, read-only MCP server (`/mcp`, SPEC section 9): what AI assistants may ask Bench.

- `tools`: the answers, built from the same views and privacy gate as the public pages.
- `server`: the `MCPServer` with the tools registered once, at import.
- `transport`: serving one Streamable HTTP request (stateless, JSON) as an ASGI call.
"""
