"""The contract: a memory's fields, the vocabulary and bounds, the value types, the errors."""
