"""The service every transport calls, and what it runs: validation, redaction, embedding
jobs, the lifecycle sweep."""
