"""The ways in: MCP (mcp/), REST and the web page (rest/), the terminal (cli/)."""
