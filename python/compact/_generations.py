"""Generations of a history kept in Compact's append-only log: clearing a history starts a new
Compact session ``<session_id>~N``; the log keeps the old ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .manager import CompactManager


def generation_id(session_id: str, generation: int) -> str:
    """The Compact session holding ``generation`` of ``session_id``'s history."""
    return session_id if generation == 0 else f"{session_id}~{generation}"


def latest_generation(manager: CompactManager, session_id: str) -> int:
    """The newest generation of ``session_id`` the store holds (0 when it holds none)."""
    prefix = session_id + "~"
    generations = [0]
    for s in manager.sessions():
        sid = s["id"]
        if sid.startswith(prefix) and sid[len(prefix) :].isdigit():
            generations.append(int(sid[len(prefix) :]))
    return max(generations)
