"""Runs: the ``Runner`` (compose, call the model and tools, journal each step), replay
of a recorded run, and rebuilding a run's model and settings from its record."""
