"""Type stubs of the extension module ``compact._native`` (crates/python). Use the ``compact``
package instead: it wraps these in the seed 003 API."""

from typing import Any, Callable, Iterable, Sequence, final

__all__ = [
    "Manager",
    "__version__",
    "check_config",
    "count_messages",
    "count_tokens",
    "default_policy",
    "detect_format",
    "round_trip",
    "templates",
]

__version__: str

@final
class Manager:
    """The session runtime (``compact_session::CompactManager``)."""

    def __new__(
        cls,
        config: str,
        *,
        name: str = "CompactConfig",
        env: bool = False,
        summarizer: object | None = None,
        runner: Callable[[object, dict[str, Any]], str] | None = None,
        redaction_hook: Callable[[str], Iterable[tuple[int, int, str]]] | None = None,
        max_cached_sessions: int | None = None,
    ) -> Manager: ...
    def preflight(
        self,
        session_id: str,
        messages: Sequence[Any],
        *,
        format: str | None = None,
        system: object | None = None,
        tools: object | None = None,
        model: str | None = None,
        assume_unchanged: bool = False,
    ) -> dict[str, Any]: ...
    def manual_compact(
        self,
        session_id: str,
        messages: Sequence[Any],
        *,
        note: str = "manual",
        format: str | None = None,
        system: object | None = None,
        tools: object | None = None,
        model: str | None = None,
    ) -> dict[str, Any]: ...
    def record_usage(
        self,
        session_id: str,
        input_tokens: int,
        *,
        cache_read_input_tokens: int = 0,
        cache_creation_input_tokens: int = 0,
        cached_input_tokens: int = 0,
        model: str | None = None,
    ) -> dict[str, Any]: ...
    def recover(
        self, session_id: str, status: int, body: str, *, format: str | None = None, system: object | None = None
    ) -> dict[str, Any]: ...
    def memory(self, session_id: str, *, all: bool = False) -> list[dict[str, Any]]: ...
    def set_fact_lifecycle(self, session_id: str, fact_id: str, lifecycle: str) -> bool: ...
    def link_parent(self, session_id: str, parent_id: str) -> bool: ...
    def parent_of(self, session_id: str) -> str | None: ...
    def idle_compact(self, session_id: str) -> dict[str, int] | None: ...
    def recall(self, session_id: str, reference: str, *, format: str | None = None) -> dict[str, Any]: ...
    def messages(
        self, session_id: str, *, view: bool = False, format: str | None = None, system: object | None = None
    ) -> list[Any]: ...
    def truncate_tool_output(self, session_id: str, call_id: str, output: str) -> str: ...
    def sessions(self) -> list[dict[str, Any]]: ...
    def forget_converted(self, session_id: str) -> None: ...
    def evict(self, session_id: str) -> None: ...

def count_tokens(text: str, encoding: str | None = None, model: str | None = None) -> int: ...
def count_messages(
    messages: Sequence[Any],
    format: str | None = None,
    system: object | None = None,
    tools: object | None = None,
    encoding: str | None = None,
    model: str | None = None,
) -> int: ...
def detect_format(messages: Sequence[Any]) -> str: ...
def round_trip(messages: Sequence[Any], format: str | None = None) -> list[dict[str, object]]: ...
def default_policy() -> dict[str, Any]: ...
def check_config(text: str, name: str = "CompactConfig", env: bool = False) -> dict[str, Any]: ...
def templates() -> list[str]: ...
