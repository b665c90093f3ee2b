"""The run journal: keys (``keys``), typed versioned records with their upgrade chains
(``records``), the one writer (``writer``), the one reader (``reader``: ``load_run``)
and the input digests resume and replay check (``hashes``)."""

from memory_core.journal.hashes import input_digest, input_hashes, message_hash, verify_step_input
from memory_core.journal.keys import ObserverKeys, RunKeys, check_run_id
from memory_core.journal.reader import (
    ObserverReader,
    RunData,
    RunReader,
    RunStep,
    load_run,
    prefetched_readers,
)
from memory_core.journal.records import (
    RECORDS,
    ImportRecord,
    InputRecord,
    ObserveRecord,
    OutputRecord,
    PersistRecord,
    ReflectRecord,
    StepRecord,
    TitleRecord,
    ToolRecord,
    ToolSpecRecord,
    load_record,
    validated,
)
from memory_core.journal.writer import JournalWriter, ObserverWriter

__all__ = [
    "RECORDS", "ImportRecord", "InputRecord", "JournalWriter", "ObserveRecord",
    "ObserverKeys", "ObserverReader", "ObserverWriter", "OutputRecord", "PersistRecord",
    "ReflectRecord", "RunData", "RunKeys", "RunReader", "RunStep", "StepRecord",
    "TitleRecord", "ToolRecord", "ToolSpecRecord", "check_run_id", "input_digest", "input_hashes",
    "load_record", "load_run", "message_hash", "prefetched_readers", "validated", "verify_step_input",
]
