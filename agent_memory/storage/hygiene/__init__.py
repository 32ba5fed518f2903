"""What hygiene (service.hygiene) reads and writes, the same on every engine, in plain SQL."""
