"""Running Python code the Rust engine calls back: summarisers (sync or async).

The engine calls :func:`call_summarizer` from the thread that runs the manager call, with the GIL
taken back. A coroutine returned by the summariser runs on the event loop of the ``async`` manager
call that started the work (``await manager.apreflight(...)``: the loop is free, the call itself
runs in a worker thread), else on a private event loop thread started on first use (a sync call,
even one made from inside a running loop, never blocks on a loop it is itself blocking).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from typing import Any, Awaitable, Mapping

from .messages import Message
from .summarizer import SummaryRequest

#: The event loop of the async manager call in progress on this thread's context, if any.
caller_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "compact_caller_loop", default=None
)

_private_loop: asyncio.AbstractEventLoop | None = None
_private_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _private_loop
    with _private_lock:
        if _private_loop is None or _private_loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="compact-summarizer-loop", daemon=True)
            thread.start()
            _private_loop = loop
        return _private_loop


def run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Runs an awaitable to completion from a thread that is not running it."""

    async def wrapper() -> Any:
        return await awaitable

    loop = caller_loop.get()
    if loop is None or loop.is_closed():
        loop = _background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("an async summariser cannot run on the loop that is waiting for it")
    return asyncio.run_coroutine_threadsafe(wrapper(), loop).result()


def _text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, Message):
        return result.text
    if isinstance(result, Mapping) and "content" in result:
        return Message.from_dict({"role": "assistant", **result}).text
    raise TypeError(f"a summariser returns text, a Message or a dict with 'content', not {type(result).__name__}")


def call_summarizer(target: Any, fields: dict[str, Any]) -> str:
    """Called by the engine: builds the :class:`SummaryRequest`, calls ``target`` and returns the
    text. Exceptions propagate (the engine falls back and reports them)."""
    request = SummaryRequest(**fields)
    method = getattr(target, "summarize", None)
    result = method(request) if callable(method) else target(request)
    if inspect.isawaitable(result):
        result = run_awaitable(result)
    return _text(result)
