"""The public conformance suite (memory_core.testing) on the project's five adapter
configurations (tests/storage_factories.py): every test once per adapter, as
``TestJournal::test_…[sqlite]``."""

from __future__ import annotations

from memory_core.testing import conformance_tests
from tests.storage_factories import FACTORIES

globals().update(conformance_tests(*FACTORIES))
