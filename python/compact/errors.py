"""Exceptions raised by Compact.

Every error is a :class:`CompactError`. ``kind`` is the Rust error's kind (``"insufficient_budget"``,
``"conflict"``, ``"undecodable"``...) and ``details`` its fields, so callers can branch on either
the class or the kind. Bad input is an :class:`InvalidInputError` (also a :class:`ValueError`)
whose message names the offending place (``messages[3].content[0]``); it is raised before anything
is logged, so a refused call changes nothing.
"""

from __future__ import annotations

from typing import Any


class CompactError(Exception):
    """Base class of every error Compact raises."""

    kind: str
    """The Rust error's kind, snake case."""
    details: dict[str, Any]
    """The error's fields (session id, floor and budget, status...)."""

    def __init__(self, message: str = "", *, kind: str = "other", details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.details = dict(details or {})


class InvalidInputError(CompactError, ValueError):
    """The call's arguments are not usable (a malformed message, an unknown format, an empty or
    invalid session id). Nothing was logged."""


class ConfigError(CompactError, ValueError):
    """The configuration is invalid (the message names the key)."""


class UnknownSessionError(CompactError, LookupError):
    """No session with this id exists (only ``preflight`` starts one)."""


class UnknownReferenceError(CompactError, LookupError):
    """The session's log holds no item with this id."""


class StateError(CompactError):
    """The call does not fit the session's state (``record_usage`` or ``recover`` before any
    preflight, ``recover`` of a request that was not the last one prepared)."""


class InsufficientBudgetError(CompactError):
    """The request cannot fit: its irreducible floor (pinned items) is over the usable budget.
    ``details["floor"]`` and ``details["budget"]`` give the numbers. The request's items are logged."""


class CompactionError(CompactError):
    """Compaction failed otherwise (no progress, still over budget, a strategy failure)."""


class SummarizerError(CompactError):
    """The summariser failed and the policy says not to fall back (``on_summarizer_failure="fail"``)."""


class StoreError(CompactError):
    """The session store failed (``kind="conflict"`` when another writer moved the log on: retry)."""


class ArchiveError(CompactError):
    """The archive failed."""


class CorruptLogError(CompactError):
    """The session's log holds something this version cannot read back."""


class RecoveryError(CompactError):
    """Overflow recovery gave up: ``kind`` is ``not_an_overflow``, ``attempts_exhausted``,
    ``no_progress`` or ``hopeless``; start a new session to continue."""


__all__ = [
    "ArchiveError",
    "CompactError",
    "CompactionError",
    "ConfigError",
    "CorruptLogError",
    "InsufficientBudgetError",
    "InvalidInputError",
    "RecoveryError",
    "StateError",
    "StoreError",
    "SummarizerError",
    "UnknownReferenceError",
    "UnknownSessionError",
]
