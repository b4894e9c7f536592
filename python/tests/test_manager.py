"""The manager over the session runtime: compaction of a long session, protected items, events
and exporters, usage, recall, history against view, manual compaction, recovery, stores."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import Sim
from helpers import POLICY, SYSTEM, chat_history

import compact
from compact import (
    CompactConfig,
    CompactManager,
    CompactPolicy,
    MemoryExporter,
    Message,
    RecoveryError,
    SqliteStore,
)

WINDOW = 8192


def manager(**kwargs: Any) -> CompactManager:
    return CompactManager(CompactConfig(max_context_tokens=WINDOW, policy=CompactPolicy(reserved_output_tokens=1024), **kwargs))


def test_a_long_session_stays_in_the_window_and_protected_items_survive() -> None:
    exporter = MemoryExporter()
    m = manager(exporter=exporter)
    history = chat_history(0)
    compactions = 0
    for step in range(60):
        history = chat_history(step + 1)
        prepared = m.prepare("long", history)
        tokens = compact.count_messages(prepared.messages)
        assert tokens <= WINDOW - 1024, f"step {step}: {tokens} tokens sent"
        # The system prompt and the protected developer policy are never pruned or changed.
        assert prepared.messages[0] == {"role": "system", "content": SYSTEM}
        assert {"role": "developer", "content": POLICY, "protected": True} in prepared.messages
        compactions += prepared.compacted
    assert compact.count_messages(history) > 3 * WINDOW, "the session is several windows long"
    assert compactions >= 2
    assert exporter.named("compact.compacted"), "compaction events reach the exporter"
    assert all(e["session_id"] == "long" for e in exporter.events)
    # The full history is kept: the log returns every message as received.
    assert m.history("long") == history
    assert len(m.view("long")) < len(history)


def test_protected_message_objects_are_kept_verbatim() -> None:
    m = manager()
    note = Message("user", "Acceptance criteria: all tests green, no new warnings.", {"protected": True})
    msgs: list[Message] = [Message("system", SYSTEM), note]
    for step in range(50):
        msgs.append(Message("user", f"step {step}: " + "lorem ipsum dolor sit amet " * 60))
        msgs.append(Message("assistant", f"ok {step}"))
        out = m.preflight("objects", msgs)
        assert note in out
        assert all(isinstance(x, Message) for x in out)


def test_recall_returns_what_compaction_replaced() -> None:
    m = manager()
    history = chat_history(40)
    prepared = m.prepare("recall", history)
    assert prepared.compacted
    sent = json.dumps(prepared.messages)
    dropped = [msg["content"] for msg in history if msg.get("role") == "tool" and msg["content"] not in sent]
    assert dropped, "some outputs are no longer sent whole"
    # The view names the ids of what it replaced; each one recalls its original from the log.
    ids = sorted(set(re.findall(r"\bi[0-9a-f]{10}\b", sent)))
    assert ids, sent[:2000]
    recalled = [m.recall("recall", i) for i in ids]
    contents = [msg.get("content") for r in recalled for msg in r]
    assert any(c in dropped for c in contents)
    with pytest.raises(compact.UnknownReferenceError) as missing:
        m.recall("recall", "i0000000000")
    assert missing.value.kind == "unknown_reference"


def test_manual_compaction_reduces_the_estimate_by_at_least_40_percent() -> None:
    m = CompactManager(CompactConfig(max_context_tokens=128_000))
    history = chat_history(30)
    before = compact.count_messages(history)
    out = m.manual_compact("manual", history, note="user-command")
    after = compact.count_messages(out)
    assert after <= before * 0.6, (before, after)
    assert out[0] == history[0]
    assert history[1] in out


def test_record_usage_calibrates() -> None:
    m = manager()
    prepared = m.prepare("usage", chat_history(2))
    update = m.record_usage("usage", prepared.report["tokens"] * 2)
    assert update["sample"] == pytest.approx(2.0, rel=0.01)
    assert update["ratio"] > 1.0
    assert update["cached_input_tokens"] == 0
    # OpenAI's cached part of the input (logged for the web view's cache-hit share per call).
    m.prepare("usage", chat_history(3))
    update = m.record_usage("usage", 3000, cached_input_tokens=2048)
    assert update["cached_input_tokens"] == 2048
    # Anthropic's cache reads count too; the share never exceeds the input.
    m.prepare("usage", chat_history(4))
    update = m.record_usage("usage", 100, cache_read_input_tokens=900, cached_input_tokens=5000)
    assert update["cached_input_tokens"] == 1000


def test_recovery_after_a_real_overflow_error(sim: Sim) -> None:
    m = CompactManager(CompactConfig(max_context_tokens=32_000, policy=CompactPolicy(reserved_output_tokens=1024)))
    history = chat_history(40)
    sent = m.preflight("recover", history)
    sim.set_window(compact.count_messages(sent) // 2)
    body = json.dumps({"model": "gpt-4o", "messages": sent}).encode()
    req = urllib.request.Request(sim.openai_base_url + "/chat/completions", data=body, method="POST")
    req.add_header("content-type", "application/json")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=30)
    error = refused.value.read().decode()
    assert refused.value.code == 400 and "context" in error
    retry = m.recover("recover", 400, error)
    assert compact.count_messages(retry) < compact.count_messages(sent)
    assert retry[0] == history[0]
    with pytest.raises(RecoveryError) as not_overflow:
        m.recover("recover", 500, '{"error": {"message": "server error"}}')
    assert not_overflow.value.kind == "not_an_overflow"
    assert not_overflow.value.details == {"status": 500}


def test_a_sqlite_store_keeps_sessions_across_managers(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first = CompactManager(CompactConfig(max_context_tokens=WINDOW, storage=SqliteStore(path)))
    history = chat_history(3)
    first.preflight("kept", history)
    del first
    second = CompactManager(CompactConfig(max_context_tokens=WINDOW, storage=SqliteStore(path)))
    assert [s["id"] for s in second.sessions()] == ["kept"]
    assert second.history("kept") == history


def test_truncation_at_write_time_keeps_the_original() -> None:
    m = CompactManager(CompactConfig(max_context_tokens=WINDOW, policy=CompactPolicy(tool_output_max_tokens=200)))
    m.preflight("trunc", [{"role": "user", "content": "go"}])
    output = "\n".join(f"line {i}: " + "x" * 40 for i in range(400))
    text = m.truncate_tool_output("trunc", "call_1", output)
    assert len(text) < len(output)
    reference = re.search(r"recall (i[0-9a-f]{10})", text)
    assert reference, text
    recalled = m.recall("trunc", reference.group(1))
    assert recalled[0]["content"] == output


def test_redaction_keeps_secrets_out_of_the_log_and_events() -> None:
    exporter = MemoryExporter()
    hooked: list[str] = []

    def hook(text: str) -> list[tuple[int, int, str]]:
        hooked.append(text)
        i = text.find("EMP-")
        return [(i, i + 10, "employee_id")] if i >= 0 else []

    m = manager(exporter=exporter, redact=hook)
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0" * 3
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"my key is {secret}, I am EMP-123456"}]
    out = m.preflight("redact", history)
    assert out == history, "the model is sent what the host sent"
    m.evict("redact")  # the next read rebuilds the session from its log
    logged = json.dumps(m.history("redact"))
    assert secret not in logged and "EMP-123456" not in logged
    assert "[REDACTED:" in logged
    assert secret not in json.dumps(exporter.events)
    assert hooked


def test_default_policy_and_config_errors() -> None:
    defaults = compact.default_policy()
    assert defaults["max_context_tokens"] == 128_000
    assert defaults["keep_recent_turns"] == 6
    resolved = CompactConfig(model="gpt-4o", policy=CompactPolicy(trigger_pct=0.85, strategy="task_state")).resolved()
    assert resolved["trigger_pct"] == 0.85
    with pytest.raises(compact.ConfigError) as bad:
        CompactManager(CompactConfig(max_context_tokens=WINDOW, policy=CompactPolicy(trigger_pct=1.7)))
    assert "trigger_pct" in str(bad.value)
    with pytest.raises(compact.ConfigError) as unknown:
        CompactManager(CompactConfig.from_yaml("policy:\n  triger_pct: 0.8\n"))
    assert "triger_pct" in str(unknown.value) and ":2" in str(unknown.value)
    assert "task_state" in compact.templates()


def test_events_reach_a_callback_and_a_failing_exporter_never_fails_the_call() -> None:
    seen: list[str] = []

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("collector down")

    m = manager(exporter=[compact.CallbackExporter(lambda e: seen.append(e["event"])), compact.CallbackExporter(broken)])
    with pytest.warns(RuntimeWarning, match="collector down"):
        out = m.preflight("events", chat_history(2))
    assert out == chat_history(2)
    assert "compact.token_estimate" in seen and "compact.trigger_decision" in seen and "compact.sent" in seen


def test_a_subagent_session_is_linked_to_its_parent_once() -> None:
    m = manager()
    m.prepare("lead", chat_history(2))
    m.prepare("lead/task-1", chat_history(1))
    assert m.parent("lead/task-1") is None
    assert m.link_parent("lead/task-1", "lead") is True
    assert m.link_parent("lead/task-1", "lead") is False, "logged once"
    assert m.parent("lead/task-1") == "lead"
    # Its own compactions: the subagent's log holds the link, the parent's does not.
    assert m.parent("lead") is None
    for bad in [("lead", "lead"), ("lead", "lead/task-1"), ("lead/task-1", "other")]:
        with pytest.raises(compact.errors.InvalidInputError) as refused:
            m.link_parent(*bad)
        assert refused.value.kind == "invalid_parent", bad


def test_remembered_facts_can_be_listed_pinned_and_forgotten() -> None:
    m = CompactManager(CompactConfig.from_yaml(f"max_context_tokens: {WINDOW}\nmemory:\n  enabled: true\n"))
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Refactor the parser. Never push to main without review."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "edit_1",
                    "type": "function",
                    "function": {
                        "name": "Edit",
                        "arguments": json.dumps({"file_path": "/work/app/src/parser.rs", "old_string": "a", "new_string": "b"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "edit_1", "content": "ok"},
    ]
    sent = m.preflight("facts", messages)
    facts = m.memory("facts")
    kinds = {f["kind"]: f for f in facts}
    assert {"constraint", "file_state"} <= set(kinds), facts
    rule = kinds["constraint"]
    assert "Never push to main without review" in rule["text"]
    assert rule["lifecycle"] == "active" and rule["sources"], rule
    assert any("Never push to main" in json.dumps(msg) for msg in sent[1:2]), "the block follows the system prompt"
    assert m.pin("facts", rule["id"]) is True
    assert m.pin("facts", rule["id"]) is False, "pinned already"
    assert {f["id"]: f["lifecycle"] for f in m.memory("facts")}[rule["id"]] == "pinned"
    assert m.unpin("facts", rule["id"]) is True
    assert m.forget("facts", rule["id"]) is True
    assert rule["id"] not in {f["id"] for f in m.memory("facts")}
    assert {f["id"]: f["lifecycle"] for f in m.memory("facts", all=True)}[rule["id"]] == "forgotten"
    # The next call no longer carries it.
    resent = m.preflight("facts", messages + [{"role": "user", "content": "Go on."}])
    assert not any("Never push to main without review" in json.dumps(msg) for msg in resent[1:2])
    with pytest.raises(compact.errors.InvalidInputError):
        m.pin("facts", "f0000000000")


def test_a_quiet_session_is_compacted_ahead_of_its_next_call() -> None:
    m = manager()
    # The background compactor starts with the manager when the policy sets a delay (here an hour:
    # it never fires during the test; the calls below do by hand what it does when a session is quiet).
    background = CompactManager(
        CompactConfig(max_context_tokens=WINDOW, policy=CompactPolicy(reserved_output_tokens=1024, idle_delay_ms=3_600_000))
    )
    assert background.prepare("b", chat_history(1)).messages
    assert m.idle_compact("nobody") is None
    done = None
    for step in range(1, 80):
        prepared = m.prepare("quiet", chat_history(step))
        done = m.idle_compact("quiet")
        if done is not None:
            break
        assert not prepared.compacted or step > 1
    assert done is not None, "no idle compaction in 80 steps"
    assert done["tokens_after"] < done["tokens_before"]
    view = m.view("quiet")
    # The next call extends the compacted view: no compaction of its own.
    nxt = m.prepare("quiet", chat_history(step + 1))
    assert not nxt.compacted
    assert nxt.messages[: len(view)] == view
