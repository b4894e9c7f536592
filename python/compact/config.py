"""Configuration: seed 003's ``CompactConfig`` and ``CompactPolicy``, and the store, archive,
redaction and summariser choices.

A field left ``None`` takes the engine's default (``compact.default_policy()`` lists them). The
configuration is written as the document of Compact's YAML file and resolved and validated by the
Rust engine (the ``compact-config`` crate), exactly as ``compactctl`` resolves a file: nothing is
validated twice, and an invalid value raises :class:`compact.ConfigError` naming the key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Sequence, Union

from . import _native

if TYPE_CHECKING:
    from .exporters import Exporter
    from .summarizer import Summarizer

Role = Literal["system", "developer", "assistant", "user", "tool"]

#: A redaction hook: the secrets in a text, as ``(start, end, kind)`` character offsets.
RedactHook = Callable[[str], Iterable[tuple[int, int, str]]]


@dataclass
class CompactPolicy:
    """When and how a conversation is compacted (seed 003's policy; every field optional).

    ``strategy`` is an engine strategy (``tiered``, ``codex``, ``segmented``,
    ``observation-masking``, ``sliding-window``, ``deletion``, ``cfpm``) or one of seed 003's summary
    styles (``task_state``, ``brief``, ``decision_log``), which choose the summary template.
    """

    trigger_pct: float | None = None
    hard_cap_buffer: int | None = None
    keep_recent_turns: int | None = None
    keep_tool_io_pairs: int | None = None
    roles_never_prune: Sequence[Role] | None = None
    protected_flag: str | None = None
    strategy: str | None = None
    mode: Literal["off", "remind", "auto"] | None = None
    soft_trigger_pct: float | None = None
    boundary_trigger_pct: float | None = None
    min_tokens_left: int | None = None
    target_pct: float | None = None
    min_gain_pct: float | None = None
    reserved_output_tokens: int | None = None
    protected_tools: Sequence[str] | None = None
    tool_output_max_tokens: int | None = None
    user_message_max_tokens: int | None = None
    tier1_min_savings_tokens: int | None = None
    summary_max_tokens: int | None = None
    on_summarizer_failure: Literal["deterministic", "fail"] | None = None
    overflow_max_retries: int | None = None
    #: Idle-time compaction: after this many quiet milliseconds, a session whose next call would
    #: compact is compacted in the background (off when unset or 0).
    idle_delay_ms: int | None = None
    manual_trigger_phrases: Sequence[str] | None = None

    def document(self) -> dict[str, Any]:
        """The ``policy:`` section of the configuration file for the fields that are set."""
        doc: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.name == "tool_output_max_tokens":
                doc["tool_output"] = {"max_tokens": value}
            elif isinstance(value, (list, tuple)):
                doc[f.name] = list(value)
            else:
                doc[f.name] = value
        return doc


@dataclass(frozen=True)
class MemoryStore:
    """Session logs in memory (the default): gone with the process."""

    def document(self) -> dict[str, Any]:
        return {"kind": "memory"}


@dataclass(frozen=True)
class SqliteStore:
    """Session logs in one SQLite file (WAL): they survive restarts."""

    path: str | os.PathLike[str]

    def document(self) -> dict[str, Any]:
        return {"kind": "sqlite", "path": os.fspath(self.path)}


@dataclass(frozen=True)
class PostgresStore:
    """Session logs in PostgreSQL (``postgres://USER@HOST:PORT/DB``), shared by processes."""

    url: str

    def document(self) -> dict[str, Any]:
        return {"kind": "postgres", "url": self.url}


Store = Union[MemoryStore, SqliteStore, PostgresStore]


@dataclass(frozen=True)
class FileStorage:
    """An archive on disk of every compaction's full transcript, checkpoint and events (seed 003's
    ``FileStorage``), with optional retention."""

    path: str | os.PathLike[str]
    max_age_days: int | None = None
    max_bytes: int | None = None

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": "fs", "path": os.fspath(self.path)}
        if self.max_age_days is not None:
            doc["max_age_days"] = self.max_age_days
        if self.max_bytes is not None:
            doc["max_bytes"] = self.max_bytes
        return doc


@dataclass(frozen=True)
class S3Storage:
    """An archive in S3-compatible storage; the keys are read from the named environment variables."""

    endpoint: str
    bucket: str
    region: str = "us-east-1"
    prefix: str | None = None
    path_style: bool | None = None
    access_key_env: str = "AWS_ACCESS_KEY_ID"
    secret_key_env: str = "AWS_SECRET_ACCESS_KEY"
    max_age_days: int | None = None
    max_bytes: int | None = None

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "kind": "s3",
            "endpoint": self.endpoint,
            "bucket": self.bucket,
            "region": self.region,
            "access_key_env": self.access_key_env,
            "secret_key_env": self.secret_key_env,
        }
        for key in ("prefix", "path_style", "max_age_days", "max_bytes"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        return doc


Archive = Union[FileStorage, S3Storage]


@dataclass(frozen=True)
class Redaction:
    """Secret redaction of everything logged, archived or emitted as an event (on by default, with
    26 built-in detectors). ``patterns`` adds regular expressions (a pattern's first group, when it
    has one, is the secret), plain or as ``(name, regex)``."""

    enabled: bool = True
    patterns: Sequence[str | tuple[str, str]] = ()

    def document(self) -> dict[str, Any]:
        patterns: list[Any] = [
            p if isinstance(p, str) else {"name": p[0], "regex": p[1]} for p in self.patterns
        ]
        return {"enabled": self.enabled, "patterns": patterns}


@dataclass(frozen=True)
class LlmSummarizer:
    """A model summariser run by the Rust engine over HTTP (an OpenAI-compatible chat API or
    Anthropic's Messages API), with the built-in templates. For a model call of your own, pass a
    :class:`compact.Summarizer` instead. ``cache_warm`` (``auto`` by default) lets it ask for the summary
    at the end of the conversation's own request, read from the prompt cache, when the request is in
    its wire format and for its model."""

    provider: Literal["openai", "anthropic"] = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    template: str | None = None
    cache_warm: Literal["auto", "always", "off"] | None = None

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.provider}
        for key in ("model", "base_url", "api_key_env", "template", "cache_warm"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        return doc


@dataclass
class CompactConfig:
    """Everything a :class:`compact.CompactManager` runs with (seed 003's ``CompactConfig``).

    ``model`` picks the window and the tokenizer from the model registry; ``max_context_tokens``
    sets the window directly (a model the registry does not know needs it). ``summarizer`` is a
    Python :class:`compact.Summarizer` (your own model call, sync or async) or an
    :class:`LlmSummarizer`; by default checkpoints are written by the deterministic summariser (no
    model call). ``exporter`` receives every event. ``redact`` is a redaction hook applied on top of
    the built-in detectors.
    """

    model: str | None = None
    max_context_tokens: int | None = None
    policy: CompactPolicy = field(default_factory=CompactPolicy)
    storage: Store | None = None
    archive: Archive | None = None
    summarizer: Summarizer | LlmSummarizer | None = None
    exporter: Exporter | Sequence[Exporter] | None = None
    redaction: Redaction | None = None
    redact: RedactHook | None = None
    models: Sequence[dict[str, Any]] | None = None
    max_cached_sessions: int | None = None
    source: tuple[str, str] | None = None
    """A configuration file's ``(name, text)`` (see :meth:`from_file`), used instead of the fields
    above that belong in the file."""
    env: bool = False
    """Apply the ``COMPACT_*`` environment variables on top (as ``compactctl`` does)."""

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, env: bool = True, **python: Any) -> CompactConfig:
        """A configuration read from a YAML (or JSON) file in Compact's format (seed 003's shape),
        with the ``COMPACT_*`` environment applied on top unless ``env=False``. ``python`` sets the
        fields that only Python can give (``summarizer``, ``exporter``, ``redact``,
        ``max_cached_sessions``)."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        return cls(source=(os.fspath(path), text), env=env, **python)

    @classmethod
    def from_yaml(cls, text: str, *, env: bool = False, **python: Any) -> CompactConfig:
        """A configuration from YAML text in Compact's format."""
        return cls(source=("config.yaml", text), env=env, **python)

    def document(self) -> tuple[str, str]:
        """The configuration file this configuration stands for: ``(name, text)``."""
        if self.source is not None:
            set_here = [
                name
                for name in ("model", "max_context_tokens", "storage", "archive", "redaction", "models")
                if getattr(self, name) is not None
            ]
            if self.policy.document():
                set_here.append("policy")
            if isinstance(self.summarizer, LlmSummarizer):
                set_here.append("summarizer")
            if set_here:
                from .errors import ConfigError

                raise ConfigError(
                    f"{', '.join(set_here)}: set in the configuration file {self.source[0]}, not both",
                    kind="config",
                )
            return self.source
        doc: dict[str, Any] = {}
        if self.model is not None:
            doc["model"] = self.model
        if self.max_context_tokens is not None:
            doc["max_context_tokens"] = self.max_context_tokens
        policy = self.policy.document()
        if policy:
            doc["policy"] = policy
        storage: dict[str, Any] = {}
        if self.storage is not None:
            storage.update(self.storage.document())
        if self.archive is not None:
            storage.setdefault("kind", "memory")
            storage["archive"] = self.archive.document()
        if storage:
            doc["storage"] = storage
        if self.redaction is not None:
            doc["redaction"] = self.redaction.document()
        if isinstance(self.summarizer, LlmSummarizer):
            doc["summarizer"] = self.summarizer.document()
        if self.models is not None:
            doc["models"] = [dict(m) for m in self.models]
        return ("CompactConfig", json.dumps(doc))

    def resolved(self) -> dict[str, Any]:
        """The configuration as the engine applies it (window, usable budget, trigger, policy).
        Raises :class:`compact.ConfigError` when it is invalid."""
        name, text = self.document()
        return _native.check_config(text, name, self.env)


def default_policy() -> dict[str, Any]:
    """The engine's defaults: what a configuration that sets nothing resolves to."""
    return _native.default_policy()


def templates() -> list[str]:
    """The built-in summary templates (``task_state``, ``brief``, ``decision_log``, ...)."""
    return _native.templates()
