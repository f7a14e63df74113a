"""What a host opens and serves: open_store, the demo, the MCP server."""
