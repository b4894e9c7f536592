"""Seed 003's ``Message`` and the conversion between messages and wire dicts.

The manager takes and returns messages as dicts in the shape of one of three wire formats (OpenAI
Chat Completions messages, OpenAI Responses input items, Anthropic messages), or as
:class:`Message` objects. A ``Message`` is a Chat message: ``role`` and ``content``, and ``meta``
holding every other key of the wire message (``tool_calls``, ``tool_call_id``, ``name``, and the
policy's protected flag: ``meta={"protected": True}`` pins the message). Unknown keys survive every
round trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence, Union

Role = Literal["system", "developer", "assistant", "user", "tool"]

#: The three wire formats.
Format = Literal["openai-chat", "openai-responses", "anthropic"]


@dataclass
class Message:
    """One chat message (seed 003): a role, its content (text, or a list of content parts) and
    ``meta``, the message's other wire keys."""

    role: Role
    content: str | list[dict[str, Any]] | None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The message as a Chat Completions message."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        for key, value in (self.meta or {}).items():
            if key in ("role", "content"):
                raise ValueError(f"Message.meta: {key!r} is the message's own field")
            out[key] = value
        return out

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """:meth:`to_dict`, under the name of pydantic's method: the conversion of a message list
        takes a ``Message`` found among dicts as it takes a pydantic model (the SDKs' types)."""
        return self.to_dict()

    @classmethod
    def from_dict(cls, message: Mapping[str, Any]) -> Message:
        """A Chat Completions message as a ``Message``."""
        meta = {k: v for k, v in message.items() if k not in ("role", "content")}
        return cls(role=message["role"], content=message.get("content"), meta=meta)

    @property
    def text(self) -> str:
        """The message's text (its text parts joined when the content is a list)."""
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "\n".join(
            str(p.get("text", "")) for p in self.content if isinstance(p, dict) and "text" in p
        )


MessageLike = Union[Mapping[str, Any], Message]


def to_wire(messages: Sequence[MessageLike]) -> tuple[Sequence[Any], bool]:
    """The messages as the binding takes them (wire dicts; a ``Message`` among dicts is left for
    the binding to convert), and whether they were all ``Message`` objects (then converted here,
    so that the result comes back as ``Message`` objects)."""
    if not isinstance(messages, (list, tuple)):
        messages = list(messages)
    # ``all`` stops at the first dict, so a history of dicts is not walked here: the conversion
    # takes a ``Message`` among dicts by its ``model_dump``.
    if messages and all(isinstance(m, Message) for m in messages):
        return [m.to_dict() for m in messages if isinstance(m, Message)], True
    return messages, False


def from_wire(messages: list[Any], as_messages: bool) -> list[Any]:
    """Wire dicts back as ``Message`` objects when the caller gave ``Message`` objects."""
    if as_messages:
        return [Message.from_dict(m) for m in messages]
    return messages
