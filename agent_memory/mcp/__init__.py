"""The MCP transport: the tools, resources and prompt, and the server over the SDK."""
