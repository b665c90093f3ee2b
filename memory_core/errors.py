"""The project's own exception types.

Every error a user can cause names the bad value and, where there is one, the fix.
"""

from __future__ import annotations


class MemoryCoreError(Exception):
    """Base of every error memory_core raises on purpose."""


class InvalidInputError(MemoryCoreError, ValueError):
    """A value given by the caller is malformed or out of range."""


class NotFoundError(MemoryCoreError, LookupError):
    """A thread, run, message or journal key that was asked for does not exist."""


class StorageError(MemoryCoreError):
    """The storage engine failed; the message names the operation."""


class SchemaOutdatedError(StorageError):
    """A read-only storage was asked to open a database made by older code: a writable
    open applies the migrations it lacks first."""


class StorageBusyError(StorageError):
    """Another process holds the database file and did not release it in time."""


class ReplayMismatch(MemoryCoreError):
    """A replay diverged from the recorded journal; the message says where."""


class ModelError(MemoryCoreError):
    """A model call failed (timeout, refused connection, malformed response)."""


class ImportFormatError(InvalidInputError):
    """An import file is malformed; the message names the line or span."""


class ToolExecutionError(MemoryCoreError):
    """A tool function raised; the run is marked failed and can be resumed."""


class RunInProgress(MemoryCoreError):
    """Another process holds the run's claim (journal/lease.py): this starter neither
    calls the model nor runs a tool."""
