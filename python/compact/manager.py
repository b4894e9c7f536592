"""``CompactManager``: seed 003's manager over the Rust session runtime.

Call :meth:`CompactManager.preflight` before every model call with the whole history; it returns
what to send (the same list when nothing had to change, else a compacted copy), in the shape it
was given. Every item received is logged, append-only, in the configured store; compaction changes
what the model sees, never the log, so any original can be recalled by the id a checkpoint, stub or
truncation marker names. The Rust work runs with the GIL released; the ``a``-prefixed methods run
it in a worker thread for async callers.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar, cast

from . import _native, _runtime
from .config import CompactConfig, LlmSummarizer
from .exporters import Exporter
from .messages import Format, MessageLike, from_wire, to_wire

T = TypeVar("T")

#: Sessions whose request shape (format, system prompt) the manager remembers for ``recover``.
_SHAPES_KEPT = 4096


@dataclass(frozen=True)
class Prepared:
    """What a preflight (or a manual compaction) returned."""

    messages: list[Any]
    """What to send, in the caller's shape."""
    report: dict[str, Any]
    """What was decided and done: ``decision``, ``tokens``, ``effective_tokens``, ``new_items``,
    ``reused_items``, ``branched``, ``manual``, ``compaction`` (the compaction report, or
    ``None``) and ``warnings`` (a manual compaction returns the compaction report itself)."""
    events: list[dict[str, Any]]
    """The call's events (also handed to the exporter and kept in the session log)."""
    format: Format
    """The wire format of ``messages``."""
    unchanged: bool
    """True when ``messages`` is the request as given (nothing was compacted or repaired)."""
    rust_seconds: float = 0.0
    """Wall time of the call's Rust work (decode, the runtime, encode), run with the GIL released."""
    converted_messages: int = 0
    """Messages of the call converted from Python objects. The leading messages that convert to
    the same JSON as at the same place in the session's last call are not converted again, nor
    decoded (a message changed in place is converted again, as is everything after it)."""
    decoded_messages: int = 0
    """Messages of the request decoded by the call (the others' decoded items were reused; with
    ``system`` in Chat format, the system message made from it counts)."""

    @property
    def compacted(self) -> bool:
        """True when this call compacted the conversation."""
        if "compaction" in self.report:
            return self.report["compaction"] is not None
        return True


class CompactManager:
    """Keeps every session's context inside its model's window (seed 003's ``CompactManager``).

    Thread-safe: calls on different sessions run in parallel; calls on one session are
    serialised.
    """

    def __init__(self, cfg: CompactConfig | None = None) -> None:
        self.config = cfg if cfg is not None else CompactConfig()
        name, text = self.config.document()
        summarizer = self.config.summarizer
        python_summarizer = None if summarizer is None or isinstance(summarizer, LlmSummarizer) else summarizer
        self._native = _native.Manager(
            text,
            name=name,
            env=self.config.env,
            summarizer=python_summarizer,
            runner=_runtime.call_summarizer if python_summarizer is not None else None,
            redaction_hook=self.config.redact,
            max_cached_sessions=self.config.max_cached_sessions,
        )
        exporter = self.config.exporter
        if exporter is None:
            self._exporters: list[Exporter] = []
        elif isinstance(exporter, (list, tuple)):
            self._exporters = list(exporter)
        else:
            self._exporters = [cast(Exporter, exporter)]
        self._shapes: OrderedDict[str, tuple[str, Any, bool]] = OrderedDict()
        self._lock = threading.Lock()

    # -- the seed 003 API ------------------------------------------------------------------------

    def preflight(
        self,
        session_id: str,
        messages: Sequence[MessageLike],
        *,
        format: Format | None = None,
        system: str | list[dict[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        assume_unchanged: bool = False,
    ) -> list[Any]:
        """Counts the request, compacts it when due and returns what to send: ``messages`` itself
        (as a new list) when nothing changed, else the compacted messages in the same shape.

        ``system`` is the system prompt when it is not among the messages (Responses
        ``instructions``, Anthropic ``system``); ``tools`` the tool declarations (they count
        against the window); ``model`` the model name (calibration is kept per model).

        Each call checks that the messages it saw last time are still what they were (a dict
        changed in place is seen) and converts only the rest. ``assume_unchanged=True`` is a
        promise that the caller never changes in place a message object it passed before (it may
        append messages, drop them, or put new objects in their place): a message that is the
        same object as at its place last time is then taken as is, unread, and a call costs what
        is new in it, as for a Rust host that keeps its decoded history.
        """
        return self.prepare(
            session_id,
            messages,
            format=format,
            system=system,
            tools=tools,
            model=model,
            assume_unchanged=assume_unchanged,
        ).messages

    def prepare(
        self,
        session_id: str,
        messages: Sequence[MessageLike],
        *,
        format: Format | None = None,
        system: str | list[dict[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        assume_unchanged: bool = False,
    ) -> Prepared:
        """:meth:`preflight` with the report and the events."""
        wire, as_messages = to_wire(messages)
        out = self._native.preflight(
            session_id,
            wire,
            format=format,
            system=system,
            tools=tools,
            model=model,
            assume_unchanged=assume_unchanged,
        )
        self._remember(session_id, out["format"], system, as_messages)
        returned = out["messages"]
        unchanged = returned is None
        result = list(messages) if unchanged else from_wire(returned, as_messages)
        self._emit(out["events"])
        return Prepared(
            result,
            out["report"],
            out["events"],
            out["format"],
            unchanged,
            out["rust_ns"] / 1e9,
            out["converted"],
            out["decoded"],
        )

    def manual_compact(
        self,
        session_id: str,
        messages: Sequence[MessageLike],
        note: str = "manual",
        *,
        format: Format | None = None,
        system: str | list[dict[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
    ) -> list[Any]:
        """Compacts the session now, whatever its size (a ``/compact`` command): logs
        ``messages`` and returns them compacted."""
        return self.compact_now(
            session_id, messages, note, format=format, system=system, tools=tools, model=model
        ).messages

    def compact_now(
        self,
        session_id: str,
        messages: Sequence[MessageLike],
        note: str = "manual",
        *,
        format: Format | None = None,
        system: str | list[dict[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
    ) -> Prepared:
        """:meth:`manual_compact` with the compaction report and the events."""
        wire, as_messages = to_wire(messages)
        out = self._native.manual_compact(
            session_id, wire, note=note, format=format, system=system, tools=tools, model=model
        )
        self._remember(session_id, out["format"], system, as_messages)
        self._emit(out["events"])
        return Prepared(
            from_wire(out["messages"], as_messages),
            out["report"],
            out["events"],
            out["format"],
            False,
            out["rust_ns"] / 1e9,
            out["converted"],
            out["decoded"],
        )

    def record_usage(
        self,
        session_id: str,
        input_tokens: int,
        *,
        cache_read_input_tokens: int = 0,
        cache_creation_input_tokens: int = 0,
        cached_input_tokens: int = 0,
        model: str | None = None,
    ) -> dict[str, Any]:
        """Feeds the provider's reported input tokens for the last prepared request back: the
        ratio of the provider's count to ours calibrates the next decisions (bounded 0.5 to 2).
        ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` are Anthropic's counts,
        ``cached_input_tokens`` OpenAI's cached part of ``input_tokens``
        (``prompt_tokens_details.cached_tokens``); the cached share per call is logged and shown
        in the web view. Returns the calibration update."""
        return self._native.record_usage(
            session_id,
            input_tokens,
            cache_read_input_tokens=cache_read_input_tokens,
            cache_creation_input_tokens=cache_creation_input_tokens,
            cached_input_tokens=cached_input_tokens,
            model=model,
        )

    def recover(self, session_id: str, status: int, body: str | bytes) -> list[Any]:
        """After the provider refused the last prepared request with a context-overflow error
        (``status`` and the error ``body``): the request to retry, compacted harder. At most
        ``overflow_max_retries`` (3) per turn; raises :class:`compact.RecoveryError` when
        compaction cannot help (not an overflow, attempts exhausted, no progress)."""
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        format, system, as_messages = self._shape(session_id)
        out = self._native.recover(session_id, status, body, format=format, system=system)
        return from_wire(out["messages"], as_messages)

    def memory(self, session_id: str, *, all: bool = False) -> list[dict[str, Any]]:
        """The session's remembered facts (with ``memory:`` on in the configuration): decisions,
        errors, file states, dependencies, constraints and preferences, each with its ``id``,
        ``kind``, ``lifecycle``, ``text``, ``confidence``, ``evidence`` and ``sources`` (the ids
        of the items it came from). The trusted ones (active, pinned), or every one with
        ``all=True``."""
        return self._native.memory(session_id, all=all)

    def forget(self, session_id: str, fact_id: str) -> bool:
        """Forgets a fact: it is never injected again, and the same statement is never admitted
        again. Logged; False when it was forgotten already."""
        return self._native.set_fact_lifecycle(session_id, fact_id, "forgotten")

    def pin(self, session_id: str, fact_id: str) -> bool:
        """Pins a fact: injected first and never evicted by its kind's cap."""
        return self._native.set_fact_lifecycle(session_id, fact_id, "pinned")

    def unpin(self, session_id: str, fact_id: str) -> bool:
        """Makes a pinned fact an ordinary active one again."""
        return self._native.set_fact_lifecycle(session_id, fact_id, "active")

    def link_parent(self, session_id: str, parent_id: str) -> bool:
        """Links a subagent's session (an Agents SDK handoff, a LangGraph subgraph, a Task tool)
        to the session that started it: the subagent keeps its own log, model, window and
        compactions, and sessions lists show it below its parent. True when the link was logged
        now, False when it already was; :class:`~compact.errors.InvalidInputError` for the
        session itself, a cycle, a tree deeper than 32 or a session already linked elsewhere."""
        return self._native.link_parent(session_id, parent_id)

    def parent(self, session_id: str) -> str | None:
        """The session ``session_id`` is linked to as a subagent, if any."""
        return self._native.parent_of(session_id)

    def recall(self, session_id: str, reference: str, *, format: Format | None = None) -> list[Any]:
        """The original of an item (a tool output, a message) by the id a checkpoint, reference
        stub or truncation marker names, as messages of ``format`` (Chat by default)."""
        out = self._native.recall(session_id, reference, format=format)
        return cast("list[Any]", out["messages"])

    def history(self, session_id: str, *, format: Format | None = None) -> list[Any]:
        """The session's full history as received (never compacted), as messages."""
        return self._messages(session_id, view=False, format=format)

    def view(self, session_id: str, *, format: Format | None = None) -> list[Any]:
        """What the model is shown for the session now (its compacted view), as messages."""
        return self._messages(session_id, view=True, format=format)

    def truncate_tool_output(self, session_id: str, call_id: str, output: str) -> str:
        """Truncates a tool output when it arrives (head and tail, with a marker naming the id
        of the logged original); returns the text to put in the conversation."""
        return self._native.truncate_tool_output(session_id, call_id, output)

    def sessions(self) -> list[dict[str, Any]]:
        """The sessions in the store: ``{"id", "version", "last_event_ms"}``."""
        return self._native.sessions()

    def idle_compact(self, session_id: str) -> dict[str, int] | None:
        """Compacts a quiet session now if its next call is expected to reach the trigger, so that
        call finds the work done: ``{"tokens_before", "tokens_after"}`` when it compacted, else
        ``None``. With ``CompactPolicy(idle_delay_ms=...)`` a background thread does this by itself
        after that much quiet time; call it yourself when your host knows the user is idle."""
        return self._native.idle_compact(session_id)

    def evict(self, session_id: str) -> None:
        """Drops a session's in-memory state (reloaded from the store on its next call)."""
        self._native.evict(session_id)

    # -- async -----------------------------------------------------------------------------------

    async def apreflight(self, session_id: str, messages: Sequence[MessageLike], **kwargs: Any) -> list[Any]:
        """:meth:`preflight` for async code: runs in a worker thread, so the event loop goes on
        (and an async summariser runs on it)."""
        return (await self.aprepare(session_id, messages, **kwargs)).messages

    async def aprepare(self, session_id: str, messages: Sequence[MessageLike], **kwargs: Any) -> Prepared:
        """:meth:`prepare` for async code."""
        return await self._in_thread(functools.partial(self.prepare, session_id, messages, **kwargs))

    async def amanual_compact(
        self, session_id: str, messages: Sequence[MessageLike], note: str = "manual", **kwargs: Any
    ) -> list[Any]:
        """:meth:`manual_compact` for async code."""
        prepared = await self._in_thread(functools.partial(self.compact_now, session_id, messages, note, **kwargs))
        return prepared.messages

    async def _in_thread(self, call: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        context.run(_runtime.caller_loop.set, loop)
        return await loop.run_in_executor(None, context.run, call)

    # -- internals -------------------------------------------------------------------------------

    def _messages(self, session_id: str, *, view: bool, format: Format | None) -> list[Any]:
        shape = self._shapes.get(session_id)
        system = shape[1] if shape is not None and format is None else None
        if format is None and shape is not None:
            format = cast(Format, shape[0])
        return self._native.messages(session_id, view=view, format=format, system=system)

    def _remember(self, session_id: str, format: str, system: Any, as_messages: bool) -> None:
        with self._lock:
            self._shapes[session_id] = (format, system, as_messages)
            self._shapes.move_to_end(session_id)
            while len(self._shapes) > _SHAPES_KEPT:
                self._shapes.popitem(last=False)

    def _shape(self, session_id: str) -> tuple[str | None, Any, bool]:
        with self._lock:
            shape = self._shapes.get(session_id)
        if shape is None:
            return None, None, False
        return shape

    def _emit(self, events: list[dict[str, Any]]) -> None:
        for exporter in self._exporters:
            for event in events:
                try:
                    exporter.emit(event)
                except Exception as e:  # an exporter never fails the call
                    warnings.warn(f"compact: exporter {type(exporter).__name__} failed: {e!r}", RuntimeWarning, stacklevel=3)
