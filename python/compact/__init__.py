"""Compact: keeps an agent's conversation inside its model's context window.

The Python package over Compact's Rust engine and session runtime (seed 003's API)::

    from compact import CompactConfig, CompactManager, CompactPolicy

    manager = CompactManager(CompactConfig(model="gpt-4o", policy=CompactPolicy(keep_recent_turns=6)))
    messages = manager.preflight("session-1", messages)   # before every model call

Integrations: :mod:`compact.agents` (OpenAI Agents SDK) and :mod:`compact.langchain` (LangChain
and LangGraph).
"""

from __future__ import annotations

from . import _native
from .config import (
    Archive,
    CompactConfig,
    CompactPolicy,
    FileStorage,
    LlmSummarizer,
    MemoryStore,
    PostgresStore,
    Redaction,
    S3Storage,
    SqliteStore,
    Store,
    default_policy,
    templates,
)
from .errors import (
    ArchiveError,
    CompactError,
    CompactionError,
    ConfigError,
    CorruptLogError,
    InsufficientBudgetError,
    InvalidInputError,
    RecoveryError,
    StateError,
    StoreError,
    SummarizerError,
    UnknownReferenceError,
    UnknownSessionError,
)
from .exporters import CallbackExporter, ConsoleExporter, Exporter, MemoryExporter
from .manager import CompactManager, Prepared
from .messages import Format, Message, MessageLike, Role
from .summarizer import Summarizer, SummaryRequest
from .tokens import TiktokenEstimator, count_messages, count_tokens

__version__: str = _native.__version__


def detect_format(messages: list[MessageLike]) -> Format:
    """The wire format of a message list (Chat when nothing decides)."""
    from .messages import to_wire

    wire, _ = to_wire(messages)
    return _native.detect_format(wire)  # type: ignore[return-value]


def round_trip(messages: list[MessageLike], *, format: Format | None = None) -> list[dict[str, object]]:
    """Decodes ``messages`` into Compact's model and encodes them back in the same format: equal
    to the input for every message shape (unknown keys included)."""
    from .messages import to_wire

    wire, _ = to_wire(messages)
    return _native.round_trip(wire, format)


__all__ = [
    "Archive",
    "ArchiveError",
    "CallbackExporter",
    "CompactConfig",
    "CompactError",
    "CompactManager",
    "CompactPolicy",
    "CompactionError",
    "ConfigError",
    "ConsoleExporter",
    "CorruptLogError",
    "Exporter",
    "FileStorage",
    "Format",
    "InsufficientBudgetError",
    "InvalidInputError",
    "LlmSummarizer",
    "MemoryExporter",
    "MemoryStore",
    "Message",
    "MessageLike",
    "PostgresStore",
    "Prepared",
    "RecoveryError",
    "Redaction",
    "Role",
    "S3Storage",
    "SqliteStore",
    "StateError",
    "Store",
    "StoreError",
    "Summarizer",
    "SummarizerError",
    "SummaryRequest",
    "TiktokenEstimator",
    "UnknownReferenceError",
    "UnknownSessionError",
    "__version__",
    "count_messages",
    "count_tokens",
    "default_policy",
    "detect_format",
    "round_trip",
    "templates",
]
