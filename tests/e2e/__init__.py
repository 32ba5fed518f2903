"""End to end: the real agent-memory spawned (stdio, REST, MCP over HTTP, several processes at
once), the page in a browser, clients installed from npm."""
