"""LangChain and LangGraph glue.

- :class:`CompactMiddleware`: middleware for LangChain's ``create_agent`` that preflights every
  model call (``wrap_model_call``): the model gets the compacted messages, the agent's state keeps
  the full history::

      from langchain.agents import create_agent
      from compact.langchain import CompactMiddleware

      agent = create_agent(model, tools, middleware=[CompactMiddleware(manager)])

- :func:`compact_pre_model_hook`: the same for LangGraph's prebuilt ``create_react_agent``
  (``pre_model_hook``; it returns ``llm_input_messages``, so the state is not rewritten).
- :class:`CompactChatMessageHistory`: a ``BaseChatMessageHistory`` whose messages live in
  Compact's store, with :meth:`CompactChatMessageHistory.compacted` for what the model should see.

LangChain messages go through OpenAI Chat form (``convert_to_openai_messages``); messages that
come back unchanged are the caller's own objects (their ids and metadata kept).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Awaitable, Callable, Final, Sequence, cast

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, SystemMessage, convert_to_messages, convert_to_openai_messages

from ._generations import generation_id, latest_generation
from .manager import CompactManager, Prepared

FORMAT: Final = "openai-chat"


def _key(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, default=str)


def _tool_declarations(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tools (LangChain tools or dicts) as Chat tool declarations, for counting."""
    if not tools:
        return []
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out = []
    for tool in tools:
        try:
            out.append(convert_to_openai_tool(tool))
        except Exception:  # a provider tool the converter does not know: not counted
            continue
    return out


def preflight_messages(
    manager: CompactManager,
    session_id: str,
    messages: Sequence[BaseMessage],
    *,
    system: str | None = None,
    tools: Sequence[Any] = (),
) -> tuple[list[BaseMessage], Prepared]:
    """Preflights LangChain messages; returns the messages to send (the caller's objects where
    unchanged) and the :class:`compact.Prepared`."""
    wire = convert_to_openai_messages(list(messages))
    assert isinstance(wire, list)
    prepared = manager.prepare(session_id, wire, format=FORMAT, system=system, tools=_tool_declarations(tools) or None)
    return _back(messages, wire, prepared), prepared


async def apreflight_messages(
    manager: CompactManager,
    session_id: str,
    messages: Sequence[BaseMessage],
    *,
    system: str | None = None,
    tools: Sequence[Any] = (),
) -> tuple[list[BaseMessage], Prepared]:
    """:func:`preflight_messages` for async code."""
    wire = convert_to_openai_messages(list(messages))
    assert isinstance(wire, list)
    prepared = await manager.aprepare(
        session_id, wire, format=FORMAT, system=system, tools=_tool_declarations(tools) or None
    )
    return _back(messages, wire, prepared), prepared


def _back(messages: Sequence[BaseMessage], wire: list[Any], prepared: Prepared) -> list[BaseMessage]:
    if prepared.unchanged:
        return list(messages)
    originals: dict[str, BaseMessage] = {}
    for original, sent in zip(messages, wire):
        originals.setdefault(_key(sent), original)
    out: list[BaseMessage] = []
    for m in prepared.messages:
        same = originals.get(_key(m))
        out.append(same if same is not None else convert_to_messages([m])[0])
    return out


def _thread_session_id() -> str | None:
    """The LangGraph thread id of the run in progress, if any."""
    try:
        from langgraph.config import get_config

        thread = get_config().get("configurable", {}).get("thread_id")
    except Exception:
        return None
    return str(thread) if thread is not None else None


def fingerprint_session_id(system: str | None, messages: Sequence[BaseMessage]) -> str:
    """A session id from what opens the conversation (system prompt and first message)."""
    h = hashlib.sha256()
    h.update((system or "").encode())
    h.update(b"\0")
    if messages:
        h.update(_key(convert_to_openai_messages(messages[0])).encode())
    return "langchain-" + h.hexdigest()[:24]


def _session_id(source: str | Callable[[Any], str] | None, request: Any, system: str | None, messages: Sequence[BaseMessage]) -> str:
    if isinstance(source, str):
        return source
    if callable(source):
        return source(request)
    return _thread_session_id() or fingerprint_session_id(system, messages)


try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
except ImportError:  # langchain < 1.0: only the LangGraph hook and the chat history
    AgentMiddleware = object  # type: ignore[assignment,misc]


class CompactMiddleware(AgentMiddleware):
    """``create_agent`` middleware: every model call gets the compacted messages.

    ``session_id``: a fixed id, a function of the ``ModelRequest``, or ``None`` for the LangGraph
    thread id (else a fingerprint of the system prompt and first message). The latest
    :class:`compact.Prepared` is kept in :attr:`last`.
    """

    def __init__(self, manager: CompactManager, session_id: str | Callable[[Any], str] | None = None) -> None:
        super().__init__()
        self.manager = manager
        self.session_id = session_id
        self.last: Prepared | None = None
        self.calls = 0
        self.compactions = 0

    def _system(self, request: Any) -> str | None:
        message = getattr(request, "system_message", None)
        if message is None:
            return None
        content = message.content
        return content if isinstance(content, str) else json.dumps(content)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        system = self._system(request)
        sid = _session_id(self.session_id, request, system, request.messages)
        messages, self.last = preflight_messages(self.manager, sid, request.messages, system=system, tools=request.tools)
        self.calls += 1
        self.compactions += self.last.compacted
        return handler(request.override(messages=cast("list[Any]", messages)))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        system = self._system(request)
        sid = _session_id(self.session_id, request, system, request.messages)
        messages, self.last = await apreflight_messages(
            self.manager, sid, request.messages, system=system, tools=request.tools
        )
        self.calls += 1
        self.compactions += self.last.compacted
        return await handler(request.override(messages=cast("list[Any]", messages)))


def compact_pre_model_hook(
    manager: CompactManager, session_id: str | Callable[[Any], str] | None = None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A LangGraph ``pre_model_hook`` (``create_react_agent(..., pre_model_hook=...)``) that
    returns the compacted messages as ``llm_input_messages``; the graph's state keeps them all."""

    def hook(state: dict[str, Any]) -> dict[str, Any]:
        messages = convert_to_messages(state["messages"])
        system = None
        if messages and isinstance(messages[0], SystemMessage):
            system = str(messages[0].content)
            messages = messages[1:]
        sid = _session_id(session_id, state, system, messages)
        compacted, _ = preflight_messages(manager, sid, messages, system=system)
        if system is not None:
            compacted = [SystemMessage(content=system), *compacted]
        return {"llm_input_messages": compacted}

    return hook


class CompactChatMessageHistory(BaseChatMessageHistory):
    """A chat history kept in Compact's store: every message added is logged (append-only);
    :attr:`messages` is the full history, :meth:`compacted` what the model should be sent.
    ``clear`` starts a new generation (``<session_id>~N``); the log keeps the old one."""

    def __init__(self, session_id: str, manager: CompactManager) -> None:
        self.session_id = session_id
        self.manager = manager
        self._messages: list[BaseMessage] | None = None
        self._generation = 0

    @property
    def compact_session_id(self) -> str:
        """The id of the Compact session holding the current generation."""
        return generation_id(self.session_id, self._generation)

    def _load(self) -> list[BaseMessage]:
        if self._messages is None:
            self._generation = latest_generation(self.manager, self.session_id)
            try:
                self._messages = list(convert_to_messages(self.manager.history(self.compact_session_id, format=FORMAT)))
            except LookupError:
                self._messages = []
        return self._messages

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message of the current generation, as added."""
        return list(self._load())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Appends and logs messages."""
        history = self._load()
        history.extend(messages)
        if history:
            preflight_messages(self.manager, self.compact_session_id, history)

    def compacted(self) -> list[BaseMessage]:
        """What the model should be sent for this history (its compacted view)."""
        history = self._load()
        if not history:
            return []
        messages, _ = preflight_messages(self.manager, self.compact_session_id, history)
        return messages

    def clear(self) -> None:
        """Starts a new, empty generation."""
        self._load()
        self._generation += 1
        self._messages = []
