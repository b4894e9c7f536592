"""Where events go (seed 003's exporters): every call's ``compact.*`` events (token estimate,
trigger decision, compacted, sent, calibration, recovery...) are handed to the configured exporter
after the call; the same events are in the session log. An exporter that raises never fails the
call: the error is reported as a ``RuntimeWarning``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Protocol, TextIO, runtime_checkable


@runtime_checkable
class Exporter(Protocol):
    """Receives events (seed 003's ``Exporter``)."""

    def emit(self, event: dict[str, Any]) -> None:
        """Handles one event (a dict with ``event``, ``ts_ms``, ``session_id`` and its fields)."""
        ...


class ConsoleExporter:
    """Writes each event as one JSON line (to stderr by default)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def emit(self, event: dict[str, Any]) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(json.dumps(event, sort_keys=True) + "\n")


class CallbackExporter:
    """Calls a function with each event (seed 003's custom callback)."""

    def __init__(self, callback: Callable[[dict[str, Any]], Any]) -> None:
        self.callback = callback

    def emit(self, event: dict[str, Any]) -> None:
        self.callback(event)


class MemoryExporter:
    """Keeps every event in ``events`` (for tests and inspection)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def named(self, name: str) -> list[dict[str, Any]]:
        """The events called ``name`` (``compact.compacted``...)."""
        return [e for e in self.events if e.get("event") == name]
