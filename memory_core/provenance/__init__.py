"""What a composition is recorded as: the provenance record (``Memctx``: each lane's
messages, what was dropped and why, tokens, settings) and the frozen prompt."""
