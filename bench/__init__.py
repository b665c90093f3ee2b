"""Benchmarks (not tests): recall speed, recall quality and the others; each script
writes its own section of bench/RESULTS.md."""
