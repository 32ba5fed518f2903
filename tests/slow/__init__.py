"""In process but too long for the fast tier: the local model's quality sets and its own
tests, tests at scale."""
