"""A local, strict stand-in for an OpenAI-compatible model provider (tests only)."""
