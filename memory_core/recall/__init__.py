"""Recall: which stored messages match a query — exact cosine, BM25 lexical or hybrid
(rank-fused) over a thread or a resource, with filters and near misses. Settings in
``config``, results in ``results``, the engine in ``engine``."""
