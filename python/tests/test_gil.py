"""The GIL is released while the Rust side works: a call blocked inside Rust (here on the lock of a
session whose other call is inside a Python summariser) lets that summariser take the GIL back and
finish. If the blocked call held the GIL, the two threads would deadlock; the joins below would
then time out (a deadlock detector, not a timing assertion)."""

from __future__ import annotations

import threading

from helpers import chat_history

from compact import CompactConfig, CompactManager, CompactPolicy, SummaryRequest

DEADLOCK = 120  # seconds: far beyond what either call needs


def test_a_call_waiting_in_rust_does_not_hold_the_gil() -> None:
    entered = threading.Event()
    go = threading.Event()

    def summarize(request: SummaryRequest) -> str:
        entered.set()
        go.wait(DEADLOCK)
        return "summary written while another call waited in Rust"

    m = CompactManager(
        CompactConfig(max_context_tokens=8192, policy=CompactPolicy(reserved_output_tokens=1024), summarizer=summarize)
    )
    results: dict[str, object] = {}

    def first() -> None:
        results["first"] = m.prepare("s", chat_history(40))

    def second() -> None:
        results["second"] = m.prepare("s", chat_history(41))

    a = threading.Thread(target=first)
    a.start()
    assert entered.wait(DEADLOCK), "the summariser was called"
    b = threading.Thread(target=second)
    b.start()  # blocks in Rust on the session's lock, which `first` holds
    go.set()
    a.join(DEADLOCK)
    b.join(DEADLOCK)
    assert not a.is_alive() and not b.is_alive(), "deadlock: a call held the GIL while waiting in Rust"
    assert "first" in results and "second" in results
