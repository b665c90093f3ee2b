"""Recall quality benchmark: hand-written long conversations with labelled
answer-bearing turns, scored by hit-rate@k per recall mode."""
