"""``python -m memory_core.cli``: the same as ``memwb``."""

from memory_core.cli import main

main()
