"""OpenAI Agents SDK glue.

- :class:`CompactInputFilter`: a ready ``RunConfig(call_model_input_filter=...)`` that runs the
  preflight before every model call of a run, so a long tool-using run stays inside the window::

      from agents import Agent, RunConfig, Runner
      from compact.agents import CompactInputFilter

      run_config = RunConfig(call_model_input_filter=CompactInputFilter(manager, session_id="chat-42"))
      result = await Runner.run(agent, "Fix the tests", run_config=run_config)

- :class:`CompactSession`: an Agents SDK ``Session`` that keeps the full history in Compact's
  store (append-only) while the model is given the compacted view.

The SDK's input items are Responses input items; the agent's tools are counted against the window.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Callable, Final, Union

from ._generations import generation_id, latest_generation
from .manager import CompactManager, Prepared

if TYPE_CHECKING:
    from agents.run_config import CallModelData, ModelInputData

#: How a filter names the session of a model call: a fixed id, or a function of the call.
SessionIdSource = Union[str, Callable[["CallModelData[Any]"], str], None]

FORMAT: Final = "openai-responses"


def _tool_declarations(agent: Any) -> list[dict[str, Any]]:
    """The agent's function tools as Responses tool declarations (for counting)."""
    out: list[dict[str, Any]] = []
    for tool in getattr(agent, "tools", None) or []:
        schema = getattr(tool, "params_json_schema", None)
        name = getattr(tool, "name", None)
        if schema is None or not isinstance(name, str):
            continue
        out.append(
            {
                "type": "function",
                "name": name,
                "description": getattr(tool, "description", "") or "",
                "parameters": schema,
            }
        )
    return out


def fingerprint_session_id(agent_name: str, instructions: str | None, first_item: Any) -> str:
    """A session id from what opens a conversation (the agent, its instructions, the first input
    item), as the proxy names sessions without an explicit id."""
    h = hashlib.sha256()
    h.update(agent_name.encode())
    h.update(b"\0")
    h.update((instructions or "").encode())
    h.update(b"\0")
    h.update(json.dumps(first_item, sort_keys=True, default=str).encode())
    return "agents-" + h.hexdigest()[:24]


class CompactInputFilter:
    """``call_model_input_filter`` for the OpenAI Agents SDK: preflights every model call's input.

    ``session_id`` names the Compact session: a string, a function of the ``CallModelData``, or
    ``None`` to derive it from the agent, its instructions and the first input item. The latest
    :class:`compact.Prepared` is kept in :attr:`last`.
    """

    def __init__(self, manager: CompactManager, session_id: SessionIdSource = None) -> None:
        self.manager = manager
        self.session_id = session_id
        self.last: Prepared | None = None
        self.calls = 0
        self.compactions = 0

    def session_of(self, data: CallModelData[Any]) -> str:
        """The Compact session id of a model call."""
        if isinstance(self.session_id, str):
            return self.session_id
        if callable(self.session_id):
            return self.session_id(data)
        items = data.model_data.input
        first = items[0] if items else None
        return fingerprint_session_id(getattr(data.agent, "name", ""), data.model_data.instructions, first)

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        from agents.run_config import ModelInputData

        model = data.agent.model if isinstance(data.agent.model, str) else None
        prepared = await self.manager.aprepare(
            self.session_of(data),
            data.model_data.input,
            format=FORMAT,
            system=data.model_data.instructions,
            tools=_tool_declarations(data.agent) or None,
            model=model,
        )
        self.last = prepared
        self.calls += 1
        self.compactions += prepared.compacted
        return ModelInputData(input=prepared.messages, instructions=data.model_data.instructions)


class CompactSession:
    """An Agents SDK ``Session`` whose full history lives in Compact's store while ``get_items``
    returns the compacted view the model should see.

    The log is append-only: ``pop_item`` and ``clear_session`` change what the session holds from
    then on (the next call is a new branch, or a new generation ``<session_id>~N``), never what was
    logged. The history is reloaded from the store when a new process opens the session (a
    persistent store such as :class:`compact.SqliteStore`; a generation cleared with no item
    added since is not remembered across processes).
    """

    session_settings: Any = None

    def __init__(self, session_id: str, manager: CompactManager) -> None:
        self.session_id = session_id
        self.manager = manager
        self._items: list[Any] | None = None
        self._generation = 0

    @property
    def compact_session_id(self) -> str:
        """The id of the Compact session holding the current generation."""
        return generation_id(self.session_id, self._generation)

    def _load(self) -> list[Any]:
        if self._items is None:
            self._generation = latest_generation(self.manager, self.session_id)
            try:
                self._items = list(self.manager.history(self.compact_session_id, format=FORMAT))
            except LookupError:
                self._items = []
        return self._items

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The compacted view (the latest ``limit`` items of it when given)."""
        items = self._load()
        if not items:
            return []
        view = (await self.manager.aprepare(self.compact_session_id, items, format=FORMAT)).messages
        return view[-limit:] if limit else view

    async def add_items(self, items: list[Any]) -> None:
        """Appends items to the history and logs them."""
        history = self._load()
        history.extend(items)
        if history:
            await self.manager.aprepare(self.compact_session_id, history, format=FORMAT)

    async def pop_item(self) -> Any | None:
        """Removes and returns the latest item (the log keeps it; the next call is a branch)."""
        history = self._load()
        return history.pop() if history else None

    async def clear_session(self) -> None:
        """Starts a new, empty generation of the session."""
        self._load()
        self._generation += 1
        self._items = []

    def full_history(self) -> list[Any]:
        """Every item of the current generation, as received (never compacted)."""
        return list(self._load())
