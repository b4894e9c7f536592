"""The Python side of bench/python.sh: writes the ~200k-token session both sides time, and times
`CompactManager.prepare` on it exactly as crates/python/examples/preflight_rust.rs times the Rust
call (a fresh session per sample, warmed with the history untimed, then the history plus one new
~1k-token message, timed).

    python bench/python_preflight.py write SESSION.json
    python bench/python_preflight.py time SESSION.json SAMPLES

`time` runs twice: the default call, which checks every message it saw last time, and the call
with ``assume_unchanged=True`` (the caller vouches that it changes no message in place, as a
Rust host keeping its decoded history trusts its own), which reads only the messages that are
not the same objects as last time.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

HISTORY_TOKENS = 200_000
MESSAGE_TOKENS = 1_000
WINDOW = 1_000_000


def session() -> dict[str, Any]:
    from compact import count_messages

    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    n = 0
    while True:
        n += 1
        call = f"call_{n}"
        history.append({"role": "user", "content": f"Step {n}: look at module {n}."})
        history.append(
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{n}.rs"})}}
            ]}
        )
        text = "".join(f"fn item_{n}_{line}(x: u32) -> u32 {{ x * {line} + {n} }}\n" for line in range(120))
        history.append({"role": "tool", "tool_call_id": call, "content": text})
        history.append({"role": "assistant", "content": f"Module {n} is fine."})
        if n % 10 == 0 and count_messages(history) >= HISTORY_TOKENS:
            break
    messages = [
        {"role": "user", "content": " ".join(f"w{(i * 7 + salt) % 1000}" for i in range(MESSAGE_TOKENS // 2))}
        for salt in range(16)
    ]
    return {"history": history, "messages": messages, "tokens": count_messages(history)}


def timed(path: str, samples: int, assume_unchanged: bool) -> dict[str, Any]:
    from compact import CompactConfig, CompactManager

    with open(path) as f:
        doc = json.load(f)
    history, news = doc["history"], doc["messages"]
    manager = CompactManager(CompactConfig(max_context_tokens=WINDOW))
    wall: list[float] = []
    cpu: list[float] = []
    rust: list[float] = []
    for i in range(samples):
        sid = f"s{i}"
        manager.prepare(sid, history, model="gpt-4o")
        request = [*history, news[i % len(news)]]
        start, cpu_start = time.perf_counter_ns(), time.thread_time_ns()
        prepared = manager.prepare(sid, request, model="gpt-4o", assume_unchanged=assume_unchanged)
        cpu.append((time.thread_time_ns() - cpu_start) / 1e3)
        wall.append((time.perf_counter_ns() - start) / 1e3)
        rust.append(prepared.rust_seconds * 1e6)
        assert prepared.unchanged
        # The history is reused from the warming call: only the new message is converted.
        assert (prepared.converted_messages, prepared.decoded_messages) == (1, 1)
    # The binding's own share of each call: its wall time less the Rust work inside it.
    own = sorted(w - r for w, r in zip(wall, rust))
    wall.sort()
    cpu.sort()
    rust.sort()

    def at(v: list[float], q: float) -> float:
        return v[round((len(v) - 1) * q)]

    return {
        "side": "python, assume_unchanged" if assume_unchanged else "python",
        "samples": samples,
        "wall_p50_us": at(wall, 0.5),
        "wall_p90_us": at(wall, 0.9),
        "cpu_p50_us": at(cpu, 0.5),
        "cpu_p90_us": at(cpu, 0.9),
        "rust_inside_p50_us": at(rust, 0.5),
        "binding_own_p50_us": at(own, 0.5),
        "binding_own_p90_us": at(own, 0.9),
    }


if __name__ == "__main__":
    if sys.argv[1] == "write":
        doc = session()
        with open(sys.argv[2], "w") as f:
            json.dump(doc, f)
        print(json.dumps({"history_messages": len(doc["history"]), "history_tokens": doc["tokens"]}))
    else:
        # The default (every message checked), then a caller that vouches for its old messages.
        for vouched in (False, True):
            print(json.dumps(timed(sys.argv[2], int(sys.argv[3]), vouched)))
