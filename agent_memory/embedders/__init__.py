"""Embedders: the seam (base.py) and its providers. Only a provider's module talks to it
(HTTP for Ollama, the model's library for a local one); nothing here imports them eagerly.
"""
