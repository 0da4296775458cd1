"""The SDK's version: the package metadata's (pyproject.toml reads it here) and the
User-Agent's (``queues-python/<version>``)."""

__version__ = "0.1.0"
