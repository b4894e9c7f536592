"""Token counting with the engine's exact counter (``o200k_base``, ``cl100k_base``: the same
tokens as tiktoken) or its calibrated estimate for models whose tokenizer is not public."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import _native
from .messages import Format, MessageLike, to_wire


def count_tokens(text: str, *, encoding: str | None = None, model: str | None = None) -> int:
    """Tokens of ``text`` (``encoding`` by name, or ``model``'s from the registry; ``o200k_base``
    by default)."""
    return _native.count_tokens(text, encoding=encoding, model=model)


def count_messages(
    messages: Sequence[MessageLike],
    *,
    format: Format | None = None,
    system: str | list[dict[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    encoding: str | None = None,
    model: str | None = None,
) -> int:
    """Tokens of a request made of ``messages`` (plus its system prompt and tools), the
    provider's per-message framing included: what preflight counts."""
    wire, _ = to_wire(messages)
    return _native.count_messages(wire, format=format, system=system, tools=tools, encoding=encoding, model=model)


class TiktokenEstimator:
    """Seed 003's ``TokenEstimator``: exact counts with a tiktoken-compatible encoding."""

    def __init__(self, encoding: str | None = None) -> None:
        self.encoding = encoding

    def estimate(self, messages: Sequence[MessageLike], model: str | None = None) -> int:
        """Tokens of ``messages`` as ``model`` (or the estimator's encoding) counts them."""
        if self.encoding is not None or model is None:
            return count_messages(messages, encoding=self.encoding or "o200k_base")
        return count_messages(messages, model=model)
