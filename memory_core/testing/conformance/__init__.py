"""The conformance suite's tests, one module per topic. They are plain functions over
the fixtures of ``memory_core.testing.fixtures``; ``memory_core.testing.conformance_tests``
turns each module into a ``Test<Topic>`` class of the caller's test module. Every
module here is picked up: a new topic needs no registration."""
