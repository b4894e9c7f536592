"""Reuse of the last call's conversion (crates/python/src/reuse.rs): a session converts and decodes
only the messages that are not, at their place, the same JSON as in its last call. Every result is
checked against a reference manager that is made to convert and decode everything on every call
(``forget_converted``), so reuse must never change what is sent, the report or the events."""

from __future__ import annotations

import copy
import json
from typing import Any, Callable

import pytest
from helpers import chat_history

from compact import CompactConfig, CompactManager, CompactPolicy, Message, Prepared

WINDOW = 8192


def manager() -> CompactManager:
    return CompactManager(CompactConfig(max_context_tokens=WINDOW, policy=CompactPolicy(reserved_output_tokens=1024)))


class Pair:
    """A manager under test and a reference that converts everything on every call."""

    def __init__(self) -> None:
        self.m = manager()
        self.ref = manager()

    def prepare(self, session: str, messages: list[Any], **kwargs: Any) -> Prepared:
        # The reference gets its own copy, so that nothing is shared with the list under test.
        self.ref._native.forget_converted(session)
        expected = self.ref.prepare(session, copy.deepcopy(messages), **kwargs)
        assert expected.converted_messages == len(messages), "the reference converts everything"
        got = self.m.prepare(session, messages, **kwargs)
        assert got.messages == expected.messages
        assert got.report == expected.report
        assert strip_times(got.events) == strip_times(expected.events)
        assert got.unchanged == expected.unchanged
        assert self.m.history(session) == self.ref.history(session)
        return got


def strip_times(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without their clock readings (two managers do not run at the same instant)."""
    timeless = ("ts", "ts_ms", "time", "timestamp", "duration_ms", "elapsed_ms")

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in timeless}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return [strip(e) for e in events]


def test_an_append_only_history_converts_only_the_new_messages() -> None:
    pair = Pair()
    history: list[dict[str, Any]] = []
    compactions = 0
    for step in range(40):
        grown = chat_history(step + 1)
        added = len(grown) - len(history)
        history.extend(grown[len(history) :])
        prepared = pair.prepare("grow", history)
        if step == 0:
            assert prepared.converted_messages == len(history)
        else:
            assert prepared.converted_messages == added == 3
            assert prepared.decoded_messages == added
        compactions += prepared.compacted
    assert compactions >= 2, "the session compacted (the results differed from the request)"
    # The same list again: nothing converted or decoded.
    again = pair.prepare("grow", history)
    assert (again.converted_messages, again.decoded_messages) == (0, 0)


def change_content(h: list[Any]) -> None:
    h[3]["content"] = "changed"


def change_arguments(h: list[Any]) -> None:
    h[3]["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": "src/other.rs"})


def append_a_part(h: list[Any]) -> None:
    h[5]["content"].append({"type": "text", "text": "one more part"})


def change_a_part(h: list[Any]) -> None:
    h[5]["content"][0]["text"] += "!"


def add_a_key(h: list[Any]) -> None:
    h[4]["name"] = "read_file"


def remove_a_key(h: list[Any]) -> None:
    del h[1]["protected"]


def reorder_keys(h: list[Any]) -> None:
    h[2]["role"] = h[2].pop("role")


def int_to_float(h: list[Any]) -> None:
    h[2]["n"] = 1.0


def float_to_negative_zero(h: list[Any]) -> None:
    h[2]["x"] = -0.0


def bool_to_int(h: list[Any]) -> None:
    h[1]["protected"] = 1


def replace_an_equal_string(h: list[Any]) -> None:
    # The same text in a new object: the same JSON, so reuse is right; nothing else changes.
    h[4]["content"] = "".join(list(h[4]["content"]))


MUTATIONS: dict[str, tuple[Callable[[list[Any]], None], int | None]] = {
    # name: (mutation, first message converted again; None: nothing)
    "content": (change_content, 3),
    "tool call arguments": (change_arguments, 3),
    "a part appended to a content list": (append_a_part, 5),
    "a part's text": (change_a_part, 5),
    "a key added": (add_a_key, 4),
    "a key removed": (remove_a_key, 1),
    "keys reordered": (reorder_keys, 2),
    "int to float": (int_to_float, 2),
    "0.0 to -0.0": (float_to_negative_zero, 2),
    "True to 1": (bool_to_int, 1),
    "an equal string": (replace_an_equal_string, None),
}


def mutable_history() -> list[dict[str, Any]]:
    h = chat_history(4)
    h[2]["n"] = 1
    h[2]["x"] = 0.0
    h[5]["content"] = [{"type": "text", "text": "Step 0: two parts."}, {"type": "text", "text": "Second."}]
    return h


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_message_changed_in_place_is_converted_again(name: str) -> None:
    mutate, first = MUTATIONS[name]
    pair = Pair()
    history = mutable_history()
    pair.prepare("s", history)
    history.append({"role": "user", "content": "Go on."})
    pair.prepare("s", history)
    mutate(history)
    prepared = pair.prepare("s", history)
    expected = 0 if first is None else len(history) - first
    assert prepared.converted_messages == expected
    assert prepared.decoded_messages == expected
    # And the history logged is the changed one.
    assert pair.m.history("s")[-len(history) :] == history


def test_long_strings_are_remembered_by_identity_but_a_moved_one_is_seen() -> None:
    # Strings, remembered when converted (or found equal), are taken as equal when they are the
    # same object at the same place (crates/python/src/identity.rs); the same objects swapped, or
    # moved to where a short string was, must still be seen.
    pair = Pair()
    history = chat_history(3)
    first, second = "first " * 20, "second " * 20
    history.append({"role": "user", "content": [{"type": "text", "text": first}, {"type": "text", "text": second}]})
    at = len(history) - 1
    history.append({"role": "user", "content": "x"})
    pair.prepare("s", history)
    for _ in range(2):  # remembered when converted, used by both checks
        assert pair.prepare("s", history).converted_messages == 0
    parts = history[at]["content"]
    parts[0]["text"], parts[1]["text"] = parts[1]["text"], parts[0]["text"]
    assert pair.prepare("s", history).converted_messages == len(history) - at
    assert pair.prepare("s", history).converted_messages == 0
    # A short string first, the long one after it (remembered as the message's first long one)...
    parts[0]["text"], parts[1]["text"] = "y", parts[0]["text"]
    pair.prepare("s", history)
    assert pair.prepare("s", history).converted_messages == 0
    # ...then that long object where the short string was, and a new long one after it.
    parts[0]["text"], parts[1]["text"] = parts[1]["text"], "z" * 100
    assert pair.prepare("s", history).converted_messages == len(history) - at
    assert pair.m.history("s")[-len(history) :] == history


def test_assume_unchanged_reads_only_the_messages_that_are_not_the_same_objects() -> None:
    pair = Pair()
    history = mutable_history()
    pair.prepare("s", history, assume_unchanged=True)
    history.append({"role": "user", "content": "Go on."})
    assert pair.prepare("s", history, assume_unchanged=True).converted_messages == 1
    # A new object in a message's place is read: a changed one is converted again from there...
    history[3] = {**history[3], "content": "a new reply"}
    assert pair.prepare("s", history, assume_unchanged=True).converted_messages == len(history) - 3
    # ...an equal one is checked and reused, as without the promise.
    history[2] = copy.deepcopy(history[2])
    assert pair.prepare("s", history, assume_unchanged=True).converted_messages == 0
    # Messages dropped from the front: the objects no longer match their places, and the check
    # finds the JSON changed.
    del history[1:3]
    assert pair.prepare("s", history, assume_unchanged=True).converted_messages == len(history) - 1
    # The promise is what makes it cheap: a message changed in place is not read again (the
    # default call reads it, `test_a_message_changed_in_place_is_converted_again`).
    before = copy.deepcopy(history[3]["content"])
    history[3]["content"] = "changed in place"
    history.append({"role": "user", "content": "And again."})
    vouched = pair.m.prepare("s", history, assume_unchanged=True)
    assert vouched.converted_messages == 1
    assert pair.m.history("s")[-len(history) :][3]["content"] == before
    checked = pair.m.prepare("s", history)
    assert checked.converted_messages == len(history) - 3
    assert pair.m.history("s")[-len(history) :] == history


def test_an_equal_new_dict_is_reused_and_a_new_list_too() -> None:
    pair = Pair()
    history = chat_history(5)
    pair.prepare("s", history)
    history[4] = copy.deepcopy(history[4])
    prepared = pair.prepare("s", history)
    assert (prepared.converted_messages, prepared.decoded_messages) == (0, 0)
    rebuilt = [dict(m) for m in history] + [{"role": "user", "content": "Next."}]
    prepared = pair.prepare("s", rebuilt)
    assert (prepared.converted_messages, prepared.decoded_messages) == (1, 1)
    # Message objects become new dicts on every call: reused all the same, up to the first tool
    # message, whose keys `Message.to_dict` writes in another order (`content` before
    # `tool_call_id`): another JSON object, so converted again.
    as_messages = [Message.from_dict(m) for m in rebuilt]
    assert list(rebuilt[4]) == ["role", "tool_call_id", "content"]
    prepared = pair.prepare("s", as_messages)
    assert prepared.converted_messages == len(rebuilt) - 4
    prepared = pair.prepare("s", as_messages)
    assert prepared.converted_messages == 0


def test_inserted_removed_and_truncated_messages() -> None:
    pair = Pair()
    history = chat_history(6)
    pair.prepare("s", history)
    # A branch: the list cut short, then a different message.
    branch = history[:7] + [{"role": "user", "content": "Try another way."}]
    prepared = pair.prepare("s", branch)
    assert prepared.converted_messages == 1
    # A message inserted in the middle: everything from it on is converted again.
    inserted = branch[:4] + [{"role": "user", "content": "Wait."}] + branch[4:]
    prepared = pair.prepare("s", inserted)
    assert prepared.converted_messages == len(inserted) - 4
    # One removed.
    removed = inserted[:2] + inserted[3:]
    prepared = pair.prepare("s", removed)
    assert prepared.converted_messages == len(removed) - 2
    # Shorter with nothing new: nothing converted, the held items cut at the end.
    prepared = pair.prepare("s", removed[:5])
    assert (prepared.converted_messages, prepared.decoded_messages) == (0, 0)
    prepared = pair.prepare("s", removed[:5] + [{"role": "user", "content": "Again."}])
    assert prepared.converted_messages == 1


def test_sessions_do_not_share_what_they_converted() -> None:
    pair = Pair()
    a = chat_history(4)
    b = chat_history(4)
    b[2] = {"role": "user", "content": "Another task."}
    pair.prepare("a", a)
    prepared = pair.prepare("b", a[:3])
    assert prepared.converted_messages == 3, "b's first call converts everything, even what a has"
    prepared = pair.prepare("b", b)
    assert prepared.converted_messages == len(b) - 2
    a.append({"role": "user", "content": "Next."})
    prepared = pair.prepare("a", a)
    assert prepared.converted_messages == 1
    # Forgetting one session's conversion leaves the other's.
    pair.m._native.forget_converted("a")
    assert pair.prepare("a", a).converted_messages == len(a)
    assert pair.prepare("b", b).converted_messages == 0
    # Evicting a session drops its conversion too.
    pair.m.evict("b")
    pair.ref.evict("b")
    assert pair.prepare("b", b).converted_messages == len(b)


def test_a_new_system_prompt_or_format_decodes_everything_again() -> None:
    pair = Pair()
    history = chat_history(3)[1:]
    pair.prepare("s", history, system="Be brief.")
    prepared = pair.prepare("s", history, system="Be brief.")
    assert (prepared.converted_messages, prepared.decoded_messages) == (0, 0)
    history.append({"role": "user", "content": "Next."})
    prepared = pair.prepare("s", history, system="Be brief.")
    assert (prepared.converted_messages, prepared.decoded_messages) == (1, 1)
    prepared = pair.prepare("s", history, system="Be thorough.")
    assert prepared.converted_messages == 0
    assert prepared.decoded_messages == len(history) + 1, "the system message and every message"
    # Plain messages read as Anthropic ones: decoded again in that format.
    plain = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]
    pair.prepare("t", plain)
    prepared = pair.prepare("t", plain, format="anthropic")
    assert (prepared.converted_messages, prepared.decoded_messages) == (0, 2)
    assert prepared.format == "anthropic"


def test_a_failed_call_drops_the_session_conversion() -> None:
    pair = Pair()
    history = chat_history(3)
    pair.prepare("s", history)
    bad = [*history, {"role": "user", "content": {1, 2}}]
    with pytest.raises(Exception, match=r"messages\[12\]\.content"):
        pair.m.prepare("s", bad)
    undecodable = [*history, {"role": "nobody", "content": "x"}]
    with pytest.raises(Exception, match=r"messages\[12\]\.role"):
        pair.m.prepare("s", undecodable)
    history.append({"role": "user", "content": "Fixed."})
    assert pair.prepare("s", history).converted_messages == len(history)


def test_responses_and_anthropic_histories_reuse_too() -> None:
    pair = Pair()
    responses: list[dict[str, Any]] = [
        {"role": "user", "content": "Read a file."},
        {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "fn main() {}"},
    ]
    pair.prepare("r", responses, system="Be brief.")
    responses.append({"type": "function_call", "call_id": "c2", "name": "read_file", "arguments": "{}"})
    prepared = pair.prepare("r", responses, system="Be brief.")
    assert (prepared.converted_messages, prepared.decoded_messages) == (1, 1)
    responses[1]["arguments"] = '{"path": "x"}'
    prepared = pair.prepare("r", responses, system="Be brief.")
    assert (prepared.converted_messages, prepared.decoded_messages) == (3, 3)
    anthropic: list[dict[str, Any]] = [
        {"role": "user", "content": "Read a file."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    pair.prepare("a", anthropic, system="Be brief.", format="anthropic")
    anthropic[1]["content"][0]["input"]["path"] = "b"
    prepared = pair.prepare("a", anthropic, system="Be brief.", format="anthropic")
    assert (prepared.converted_messages, prepared.decoded_messages) == (2, 2)


def test_a_message_object_among_dicts_is_converted_by_the_binding() -> None:
    # The wrapper no longer looks for `Message` objects among dicts: the binding converts one
    # through its `model_dump`, on every call (Python code, so never reused), as the dicts after it.
    pair = Pair()
    history: list[Any] = chat_history(2)
    history.insert(2, Message("user", "A note.", {"name": "reviewer"}))
    first = pair.prepare("s", history)
    assert first.messages == history  # the caller's own objects back when nothing changed
    assert pair.m.history("s")[2] == {"role": "user", "content": "A note.", "name": "reviewer"}
    again = pair.prepare("s", history)
    assert again.converted_messages == len(history) - 2
    # A bad Message among dicts fails as a bad message, naming its place, and changes nothing.
    history.append(Message("user", "x", {"role": "assistant"}))
    with pytest.raises(ValueError, match=r"messages\[\d+\]"):
        pair.m.prepare("s", history)


# The identity snapshot (crates/python/src/identity.rs): a message that still holds, node for node,
# the very objects it was converted from is reused without being compared by content. The native
# result counts the messages that were compared by content (`compared`): 0 when every message
# matched by identity.


class Spy:
    """The native manager, keeping its last preflight result (to read `compared`)."""

    def __init__(self, native: Any) -> None:
        self.native = native
        self.last: dict[str, Any] = {}

    def preflight(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.last = self.native.preflight(*args, **kwargs)
        return self.last

    def __getattr__(self, name: str) -> Any:
        return getattr(self.native, name)


def spied() -> tuple[Pair, Spy]:
    pair = Pair()
    spy = Spy(pair.m._native)
    pair.m._native = spy
    return pair, spy


def identity_history() -> list[dict[str, Any]]:
    h = chat_history(4)
    h[5]["content"] = [{"type": "text", "text": "Step 0: two parts."}, {"type": "text", "text": "Second."}]
    return h


def content_replaced(h: list[Any]) -> None:
    h[4]["content"] = h[4]["content"] + "\n// one more line"


def part_appended(h: list[Any]) -> None:
    h[5]["content"].append({"type": "text", "text": "A third part."})


def nested_argument_changed(h: list[Any]) -> None:
    h[6]["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": "src/elsewhere.rs"})


def key_removed_and_readded(h: list[Any]) -> None:
    # `role` comes first: re-added, it comes last, another JSON object.
    h[3]["role"] = h[3].pop("role")


def key_removed_and_readded_with_another_value(h: list[Any]) -> None:
    del h[7]["content"]
    h[7]["content"] = "The same key, last as before, with another text."


def list_elements_swapped(h: list[Any]) -> None:
    parts = h[5]["content"]
    parts[0], parts[1] = parts[1], parts[0]


def int_replaced_by_an_equal_bool(h: list[Any]) -> None:
    h[2]["n"] = True  # bool where an int was: the same Python value, another JSON value


IN_PLACE: dict[str, tuple[Callable[[list[Any]], None], int]] = {
    # name: (edit, message it changes)
    "a content string replaced": (content_replaced, 4),
    "a part appended to a content list": (part_appended, 5),
    "a nested tool-call argument changed": (nested_argument_changed, 6),
    "a key removed and re-added": (key_removed_and_readded, 3),
    "a last key removed and re-added with another value": (key_removed_and_readded_with_another_value, 7),
    "two list elements swapped": (list_elements_swapped, 5),
    "an int replaced by an equal bool": (int_replaced_by_an_equal_bool, 2),
}


@pytest.mark.parametrize("name", IN_PLACE)
def test_identity_snapshot_sees_an_in_place_edit_at_any_depth(name: str) -> None:
    edit, changed = IN_PLACE[name]
    pair, spy = spied()
    history = identity_history()
    history[2]["n"] = 1
    pair.prepare("s", history)
    # Resent as it is: every message matches its snapshot by identity, none is compared.
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 0
    edit(history)
    prepared = pair.prepare("s", history)
    # The edited message no longer matches its snapshot: compared by content, found changed,
    # converted again with everything after it.
    assert spy.last["compared"] == 1
    assert prepared.converted_messages == len(history) - changed
    assert pair.m.history("s")[-len(history) :] == history
    # Converted again, the message has a new snapshot: the next call compares nothing.
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 0


def test_identity_snapshot_a_key_readded_as_it_was_is_the_same_message() -> None:
    # The last key removed and put back with the same value object: the dict holds the same
    # objects in the same order, so it converts to the same JSON and is reused by identity.
    pair, spy = spied()
    history = identity_history()
    pair.prepare("s", history)
    value = history[7].pop("content")
    history[7]["content"] = value
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 0


def test_identity_snapshot_an_equal_rebuilt_list_is_reused_and_then_known() -> None:
    pair, spy = spied()
    history = identity_history()
    pair.prepare("s", history)
    history[5]["content"] = list(history[5]["content"])  # a new list of the same part dicts
    history[6]["tool_calls"] = copy.deepcopy(history[6]["tool_calls"])  # new dicts, new strings
    prepared = pair.prepare("s", history)
    assert (prepared.converted_messages, prepared.decoded_messages) == (0, 0)
    assert spy.last["compared"] == 2, "the two messages holding new objects were compared"
    # Their snapshots were renewed with the new objects: known by identity from now on.
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 0
    # And an in-place change of the new list is seen.
    history[5]["content"].pop()
    assert pair.prepare("s", history).converted_messages == len(history) - 5


class Text(str):
    """A subclass of str: its objects are never trusted by identity."""


def test_identity_snapshot_a_str_subclass_is_always_compared_by_content() -> None:
    pair, spy = spied()
    history = identity_history()
    history[4]["content"] = Text(history[4]["content"])
    pair.prepare("s", history)
    for _ in range(2):
        assert pair.prepare("s", history).converted_messages == 0
        assert spy.last["compared"] == 1, "the message holding a str subclass is read every time"
    history[4]["content"] = Text(history[4]["content"] + "!")
    assert pair.prepare("s", history).converted_messages == len(history) - 4
    assert pair.m.history("s")[4]["content"] == history[4]["content"]


def test_identity_snapshot_a_tuple_content_and_a_message_moved() -> None:
    pair, spy = spied()
    history: list[Any] = identity_history()
    history[5]["content"] = tuple(history[5]["content"])
    pair.prepare("s", history)
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 0
    # A tuple cannot change, but the dicts it holds can.
    history[5]["content"][1]["text"] = "Changed."
    assert pair.prepare("s", history).converted_messages == len(history) - 5
    # Two messages swapped in the list: each is compared at its new place, and found changed.
    history[8], history[9] = history[9], history[8]
    assert pair.prepare("s", history).converted_messages == len(history) - 8
    assert spy.last["compared"] == 1


def test_identity_snapshot_is_renewed_for_message_objects_the_host_keeps() -> None:
    # A message dict replaced by an equal new one is compared by content and reused; its snapshot
    # is renewed only once the host sends that same object again (a host that builds its messages
    # anew on every call would never use it).
    pair, spy = spied()
    history = identity_history()
    pair.prepare("s", history)
    history[4] = copy.deepcopy(history[4])
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 1
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 1, "the object kept this time: compared once more, then renewed"
    assert pair.prepare("s", history).converted_messages == 0
    assert spy.last["compared"] == 0
    # An in-place change of the kept object is still seen.
    history[4]["content"] += "!"
    assert pair.prepare("s", history).converted_messages == len(history) - 4
