"""The summariser protocol: plug in your own model call (sync or async).

When a compaction is due, the engine decides what to replace and asks the summariser for the
checkpoint text of those items. A summariser is an object with a ``summarize(request)`` method or a
plain callable ``summarizer(request)``; it returns the text (a ``str``, a :class:`compact.Message`,
or a dict with ``content``) or an awaitable of it. The request carries the items as Chat messages,
ready-made instructions and material (Compact's templates, each tool output cut to a budget), and
the previous checkpoint to fold in.

If it raises (or returns nothing), the engine falls back to its deterministic checkpoint and says
so in the report's warnings (``on_summarizer_failure="fail"`` raises
:class:`compact.SummarizerError` instead). History is never changed by a failed summariser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol, Union, runtime_checkable

from .messages import Message


@dataclass(frozen=True)
class SummaryRequest:
    """What to summarise."""

    messages: list[dict[str, Any]]
    """The items being replaced, oldest first, as Chat Completions messages."""
    instructions: str
    """A system prompt for the summariser model (Compact's template for ``style``)."""
    material: str
    """The items (and the previous checkpoint) rendered as text for the summariser model, each
    tool output cut to a budget."""
    style: str
    """The template's name (``checkpoint``, ``task_state``, ``brief``, ``decision_log``, ...)."""
    max_tokens: int
    """Upper bound of the summary's size in tokens."""
    previous: str | None
    """The previous checkpoint's text, to fold in rather than stack."""
    encoding: str
    """The token encoding budgets are counted with."""

    @property
    def prompt(self) -> list[dict[str, str]]:
        """``instructions`` and ``material`` as a two-message chat prompt."""
        return [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": self.material},
        ]


SummaryResult = Union[str, Message, dict[str, Any]]


@runtime_checkable
class Summarizer(Protocol):
    """An object that writes checkpoint text (seed 003's ``Summarizer``)."""

    def summarize(self, request: SummaryRequest) -> SummaryResult | Awaitable[SummaryResult]:
        """The checkpoint text for ``request``."""
        ...


SummarizerLike = Union[Summarizer, Callable[[SummaryRequest], Any]]
