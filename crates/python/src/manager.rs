//! `Manager`: the session runtime ([`CompactManager`]) for Python. Every method converts its
//! arguments while holding the GIL, releases it for the Rust work (decode, preflight or another
//! manager call, encode), and takes it back to build the result. A preflight (and a manual
//! compaction) converts and decodes only the messages that changed since the session's last call
//! ([`crate::reuse`]).

use crate::config::{llm_summarizer, resolve, session_config, template};
use crate::convert::value_to_py;
use crate::errors::{raise, Failure};
use crate::messages::{Parts, Request};
use crate::reuse::{Held, Incoming, Reuse};
use crate::summarizer::PySummarizer;
use compact_core::model::{Conversation, Format};
use compact_core::policy::Decision;
use compact_session::{CompactManager, Event, PreflightReport, Recovery, Store, Usage};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

/// The session runtime. Build it through `compact.CompactManager`, which writes the configuration
/// document and wraps the results in the seed 003 API.
#[pyclass(name = "Manager", module = "compact._native", frozen)]
pub struct Manager {
    inner: Arc<CompactManager>,
    store: Arc<dyn Store>,
    /// Per session, the last preflight's converted messages and decoded items.
    reuse: Reuse,
    /// The idle-time compactor, when `policy.idle_delay_ms` is set (stopped with the manager).
    _idle: Option<compact_session::IdleCompactor>,
}

/// What a preflight-like call returns before it becomes Python objects.
struct Outcome {
    messages: Option<Vec<Value>>,
    /// Wall time of the Rust work (decode, manager call, encode), GIL released.
    rust_ns: u64,
    format: Format,
    report: Value,
    events: Vec<Value>,
    /// The caller's messages converted from Python objects by this call (the others were reused).
    converted: usize,
    /// Messages of the request decoded by this call (the others' items were reused).
    decoded: usize,
    /// Leading messages compared by content, their snapshot not matching ([`crate::reuse`]).
    compared: usize,
}

fn elapsed_ns(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn report_json(r: &PreflightReport) -> Value {
    let (decision, reason) = match &r.decision {
        Decision::None => ("none", None),
        Decision::Remind(why) => ("remind", Some(format!("{why:?}"))),
        Decision::Compact(why) => ("compact", Some(why.to_string())),
    };
    json!({
        "decision": decision,
        "reason": reason,
        "tokens": r.tokens,
        "effective_tokens": r.effective_tokens,
        "ratio": r.ratio,
        "new_items": r.new_items,
        "reused_items": r.reused_items,
        "branched": r.branched,
        "manual": r.manual,
        "compaction": r.compaction.as_ref().map(|c| c.to_json()),
        "warnings": r.warnings,
    })
}

fn events_json(session: &str, events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut v = e.to_json();
            if let Value::Object(m) = &mut v {
                m.insert("session_id".into(), json!(session));
            }
            v
        })
        .collect()
}

fn list<'py>(py: Python<'py>, values: &[Value]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for v in values {
        list.append(value_to_py(py, v)?)?;
    }
    Ok(list)
}

fn outcome_to_py<'py>(py: Python<'py>, o: &Outcome) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match &o.messages {
        Some(m) => d.set_item("messages", list(py, m)?)?,
        None => d.set_item("messages", py.None())?,
    }
    d.set_item("format", o.format.name())?;
    d.set_item("report", value_to_py(py, &o.report)?)?;
    d.set_item("events", list(py, &o.events)?)?;
    d.set_item("rust_ns", o.rust_ns)?;
    d.set_item("converted", o.converted)?;
    d.set_item("decoded", o.decoded)?;
    d.set_item("compared", o.compared)?;
    Ok(d)
}

/// A request with no messages of its own, to encode `conversation` in its format with `system`
/// left out as the caller gave it.
fn shape_of(
    conversation: &Conversation,
    format: Option<&str>,
    system: Option<&Bound<'_, PyAny>>,
) -> Result<Request, Failure> {
    let format = match format {
        Some(f) => crate::messages::parse_format(f)?,
        None => conversation
            .format
            .filter(|f| f.is_wire())
            .unwrap_or(Format::OpenAiChat),
    };
    let parts = Parts::from_py(system, None, None)?;
    Ok(Request::build(format, Vec::new(), &parts))
}

fn check_session(session_id: &str) -> Result<(), Failure> {
    if session_id.is_empty() {
        return Err(Failure::input(
            "invalid_session_id",
            "session_id: must not be empty",
        ));
    }
    Ok(())
}

#[pymethods]
impl Manager {
    /// A manager for a configuration document (`config`: the YAML file's shape, YAML or JSON
    /// text; `name` names it in errors), with an optional Python summariser (called through
    /// `runner`), redaction hook and session cache size.
    #[new]
    #[pyo3(signature = (config, *, name="CompactConfig", env=false, summarizer=None, runner=None, redaction_hook=None, max_cached_sessions=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        config: &str,
        name: &str,
        env: bool,
        summarizer: Option<Py<PyAny>>,
        runner: Option<Py<PyAny>>,
        redaction_hook: Option<Py<PyAny>>,
        max_cached_sessions: Option<usize>,
    ) -> PyResult<Manager> {
        let resolved = raise(py, resolve(name, config, env))?;
        // The one outbound client of every part: `network:` over the process's proxy and CA
        // variables, as `compactctl` builds it.
        let client = compact_wiring::client(&resolved, &compact_wiring::Env::process())
            .map_err(|e| Failure::new("ConfigError", "network", e.to_string()).into_py_err(py))?;
        let mut session = session_config(&resolved);
        let template = raise(py, template(&resolved))?;
        match (summarizer, runner) {
            (Some(target), Some(runner)) => {
                session.summarizer = Arc::new(PySummarizer::new(py, target, runner, template));
            }
            (Some(_), None) => {
                return Err(
                    Failure::input("bad_value", "summarizer: needs a runner").into_py_err(py)
                )
            }
            _ => {
                if let Some(llm) = raise(py, llm_summarizer(&resolved, &client))? {
                    session.summarizer = llm;
                }
            }
        }
        if let Some(hook) = redaction_hook {
            let Some(redactor) = session.redactor.take() else {
                return Err(Failure::new(
                    "ConfigError",
                    "redaction",
                    "redaction: a hook needs redaction enabled",
                )
                .into_py_err(py));
            };
            session.redactor = Some(Arc::new(
                (*redactor)
                    .clone()
                    .with_hook(crate::summarizer::redaction_hook(hook)),
            ));
        }
        if let Some(n) = max_cached_sessions {
            session.max_cached_sessions = n.max(1);
        }
        let reuse = Reuse::new(session.max_cached_sessions);
        let opened = py.detach(|| -> Result<(CompactManager, Arc<dyn Store>), Failure> {
            let env = compact_wiring::Env::process();
            let store = compact_wiring::store(
                &resolved,
                compact_wiring::StoreSource::Configured(compact_wiring::Fallback::Memory),
                &env,
            )
            .map_err(|e| Failure::new("StoreError", "storage", e.to_string()))?;
            let mut manager = CompactManager::open(session, Arc::clone(&store))?;
            if let Some(archive) = compact_wiring::archive(&resolved, &env, Some(&client))
                .map_err(|e| Failure::new("ArchiveError", "archive", e.to_string()))?
            {
                manager = manager.with_archive(archive);
            }
            if let Some(exports) = compact_wiring::exports(&resolved, Some(&client))
                .map_err(|e| Failure::new("ConfigError", "telemetry", e.to_string()))?
            {
                manager = manager.with_exports(exports);
            }
            Ok((manager, store))
        });
        let (manager, store) = raise(py, opened)?;
        let inner = Arc::new(manager);
        let idle = match inner.config().idle {
            Some(settings) => Some(
                compact_session::IdleCompactor::start(&inner, settings).map_err(|e| {
                    Failure::new("ConfigError", "idle_delay_ms", e.to_string()).into_py_err(py)
                })?,
            ),
            None => None,
        };
        Ok(Manager {
            inner,
            store,
            reuse,
            _idle: idle,
        })
    }

    /// Prepares a request: returns `{"messages": list | None, "format", "report", "events"}`;
    /// `messages` is `None` when the request goes out unchanged. With `assume_unchanged`, the
    /// caller promises not to change in place message objects it passed before, and a message
    /// that is the same object as at its place last time is not read again.
    #[pyo3(signature = (session_id, messages, *, format=None, system=None, tools=None, model=None, assume_unchanged=false))]
    #[allow(clippy::too_many_arguments)]
    fn preflight<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        messages: &Bound<'py, PyAny>,
        format: Option<&str>,
        system: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        model: Option<&str>,
        assume_unchanged: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        raise(py, check_session(session_id))?;
        let held = self.reuse.take(session_id);
        let mut incoming = raise(
            py,
            Incoming::convert(
                held,
                assume_unchanged,
                messages,
                format,
                system,
                tools,
                model,
            ),
        )?;
        let manager = &self.inner;
        let outcome = py.detach(|| -> Result<(Outcome, Held), Failure> {
            let started = Instant::now();
            let (request, conversation) = incoming.decode()?;
            let prepared = manager.preflight(session_id, conversation)?;
            let unchanged = prepared.sends_request_as_is(conversation);
            let messages = if unchanged {
                None
            } else {
                Some(request.messages_of(&prepared.conversation)?)
            };
            let format = request.format;
            let report = report_json(&prepared.report);
            let events = events_json(session_id, &prepared.events);
            let rust_ns = elapsed_ns(started);
            drop(prepared);
            let outcome = Outcome {
                messages,
                rust_ns,
                format,
                report,
                events,
                converted: incoming.converted,
                decoded: incoming.decoded(),
                compared: incoming.compared,
            };
            Ok((outcome, incoming.into_held()))
        });
        let (outcome, held) = raise(py, outcome)?;
        self.reuse.put(session_id, held);
        outcome_to_py(py, &outcome)
    }

    /// Compacts the session now (after preflighting `messages`, which logs any new ones):
    /// returns `{"messages", "format", "report", "events"}`.
    #[pyo3(signature = (session_id, messages, *, note="manual", format=None, system=None, tools=None, model=None))]
    #[allow(clippy::too_many_arguments)]
    fn manual_compact<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        messages: &Bound<'py, PyAny>,
        note: &str,
        format: Option<&str>,
        system: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        model: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        raise(py, check_session(session_id))?;
        let held = self.reuse.take(session_id);
        let mut incoming = raise(
            py,
            Incoming::convert(held, false, messages, format, system, tools, model),
        )?;
        let manager = &self.inner;
        let outcome = py.detach(|| -> Result<(Outcome, Held), Failure> {
            let started = Instant::now();
            let (request, conversation) = incoming.decode()?;
            let prepared = manager.preflight(session_id, conversation)?;
            let mut events = events_json(session_id, &prepared.events);
            drop(prepared);
            let done = manager.manual_compact(session_id, note)?;
            events.extend(events_json(session_id, &done.events));
            let messages = Some(request.messages_of(&done.conversation)?);
            let format = request.format;
            let report = done.report.to_json();
            drop(done);
            let outcome = Outcome {
                messages,
                rust_ns: elapsed_ns(started),
                format,
                report,
                events,
                converted: incoming.converted,
                decoded: incoming.decoded(),
                compared: incoming.compared,
            };
            Ok((outcome, incoming.into_held()))
        });
        let (outcome, held) = raise(py, outcome)?;
        self.reuse.put(session_id, held);
        outcome_to_py(py, &outcome)
    }

    /// Feeds the provider's reported usage of the last prepared request back (calibration).
    #[pyo3(signature = (session_id, input_tokens, *, cache_read_input_tokens=0, cache_creation_input_tokens=0, cached_input_tokens=0, model=None))]
    #[allow(clippy::too_many_arguments)]
    fn record_usage<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        input_tokens: u64,
        cache_read_input_tokens: u64,
        cache_creation_input_tokens: u64,
        cached_input_tokens: u64,
        model: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let usage = Usage {
            input_tokens,
            cache_read_input_tokens,
            cache_creation_input_tokens,
            cached_input_tokens,
            model,
            ..Usage::default()
        };
        let manager = &self.inner;
        let update = py.detach(|| manager.record_usage(session_id, &usage));
        let update = raise(py, update.map_err(Failure::from))?;
        let v = json!({"model": update.model, "provider_tokens": update.provider_tokens,
            "our_tokens": update.our_tokens, "sample": update.sample, "ratio": update.ratio,
            "clamped": update.clamped, "cached_input_tokens": usage.cached_input()});
        value_to_py(py, &v)
    }

    /// After the provider refused the last prepared request (`status`, `body`): the request to
    /// retry, compacted harder. Raises `RecoveryError` when compaction cannot help.
    #[pyo3(signature = (session_id, status, body, *, format=None, system=None))]
    fn recover<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        status: u16,
        body: &str,
        format: Option<&str>,
        system: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let manager = &self.inner;
        let sent = py.detach(|| manager.last_sent(session_id));
        let sent = raise(py, sent.map_err(Failure::from))?;
        let shape = raise(py, shape_of(&sent, format, system))?;
        let outcome = py.detach(|| -> Result<Outcome, Failure> {
            let started = Instant::now();
            let retry = match manager.recover(session_id, &sent, status, body)? {
                Recovery::Retry(c) => c,
                Recovery::GiveUp(e) => return Err(e.into()),
            };
            let messages = Some(shape.messages_of(&retry)?);
            Ok(Outcome {
                messages,
                rust_ns: elapsed_ns(started),
                format: shape.format,
                report: json!({}),
                events: Vec::new(),
                converted: 0,
                decoded: 0,
                compared: 0,
            })
        });
        let outcome = raise(py, outcome)?;
        outcome_to_py(py, &outcome)
    }

    /// Links a subagent's session to the session that started it (logged once, in the subagent's
    /// log); true when logged now, false when it already was.
    #[pyo3(signature = (session_id, parent_id))]
    fn link_parent(&self, py: Python<'_>, session_id: &str, parent_id: &str) -> PyResult<bool> {
        let manager = &self.inner;
        let linked = py.detach(|| manager.link_parent(session_id, parent_id));
        raise(py, linked.map_err(Failure::from))
    }

    /// The session's facts (structured memory) as dicts: the trusted ones (active and pinned), or
    /// every one with `all`.
    #[pyo3(signature = (session_id, *, all=false))]
    fn memory<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        all: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let manager = &self.inner;
        let memory = py.detach(|| manager.memory(session_id));
        let memory = raise(py, memory.map_err(Failure::from))?;
        let facts: Vec<Value> = memory
            .facts()
            .iter()
            .filter(|f| all || f.lifecycle.trusted())
            .map(compact_core::memory::Fact::to_json)
            .collect();
        list(py, &facts)
    }

    /// Moves fact `fact_id` of the session to `lifecycle` (`forgotten`, `pinned` or `active`):
    /// logged, and the next call's memory block is rendered again. False when it was there.
    fn set_fact_lifecycle(
        &self,
        py: Python<'_>,
        session_id: &str,
        fact_id: &str,
        lifecycle: &str,
    ) -> PyResult<bool> {
        use compact_core::memory::Lifecycle;
        let to = match lifecycle {
            "forgotten" => Lifecycle::Forgotten,
            "pinned" => Lifecycle::Pinned,
            "active" => Lifecycle::Active,
            other => {
                return raise(
                    py,
                    Err(Failure::input(
                        "invalid_lifecycle",
                        format!(
                            "a fact can be made `forgotten`, `pinned` or `active`, not `{other}`"
                        ),
                    )),
                )
            }
        };
        let manager = &self.inner;
        let changed = py.detach(|| manager.set_fact_lifecycle(session_id, fact_id, to));
        raise(py, changed.map(|c| c.is_some()).map_err(Failure::from))
    }

    /// Compacts a quiet session now if its next call is expected to reach the trigger (what the
    /// idle-time compactor does after `policy.idle_delay_ms`; for hosts that know when the user is
    /// idle): `{"tokens_before", "tokens_after"}` when it compacted, else `None`.
    fn idle_compact<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let manager = &self.inner;
        let outcome = py.detach(|| manager.idle_compact(session_id));
        match raise(py, outcome.map_err(Failure::from))? {
            compact_session::IdleOutcome::Compacted {
                tokens_before,
                tokens_after,
            } => {
                let d = PyDict::new(py);
                d.set_item("tokens_before", tokens_before)?;
                d.set_item("tokens_after", tokens_after)?;
                Ok(Some(d))
            }
            _ => Ok(None),
        }
    }

    /// The session `session_id` is linked to as a subagent, if any.
    fn parent_of(&self, py: Python<'_>, session_id: &str) -> PyResult<Option<String>> {
        let store = &self.store;
        let parent = py.detach(|| compact_session::link::parent_of(store.as_ref(), session_id));
        raise(py, parent.map_err(Failure::from))
    }

    /// The original of an item by the id a checkpoint, stub or truncation marker names:
    /// `{"id", "messages"}` (the item as messages of `format`, Chat by default).
    #[pyo3(signature = (session_id, reference, *, format=None))]
    fn recall<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        reference: &str,
        format: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let manager = &self.inner;
        let item = py.detach(|| manager.recall(session_id, reference));
        let mut item = raise(py, item.map_err(Failure::from))?;
        let id = item.meta.id.as_str().to_owned();
        // Recalled for the caller to read: encoded even when the log marks it hidden from the
        // model (a truncated original, an item behind a compaction).
        item.meta.visibility.model = true;
        let mut conversation = Conversation::default();
        conversation.items.push(item);
        let shape = raise(
            py,
            shape_of(&conversation, format.or(Some("openai-chat")), None),
        )?;
        let messages = raise(py, py.detach(|| shape.messages_of(&conversation)))?;
        let d = PyDict::new(py);
        d.set_item("id", id)?;
        d.set_item("messages", list(py, &messages)?)?;
        Ok(d)
    }

    /// The session's history as received (`view=False`) or its current view (`view=True`), as
    /// messages of `format` (the format of the session's requests by default).
    #[pyo3(signature = (session_id, *, view=false, format=None, system=None))]
    fn messages<'py>(
        &self,
        py: Python<'py>,
        session_id: &str,
        view: bool,
        format: Option<&str>,
        system: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let manager = &self.inner;
        let conversation = py.detach(|| {
            if view {
                manager.view(session_id).map(|c| (*c).clone())
            } else {
                manager.history(session_id)
            }
        });
        let conversation = raise(py, conversation.map_err(Failure::from))?;
        let shape = raise(py, shape_of(&conversation, format, system))?;
        let messages = raise(py, py.detach(|| shape.messages_of(&conversation)))?;
        list(py, &messages)
    }

    /// Truncates a tool output at write time (the original is logged, recallable by the id its
    /// marker names); returns the text to put in the conversation.
    fn truncate_tool_output(
        &self,
        py: Python<'_>,
        session_id: &str,
        call_id: &str,
        output: &str,
    ) -> PyResult<String> {
        let manager = &self.inner;
        let text = py.detach(|| manager.truncate_tool_output(session_id, call_id, output));
        raise(py, text.map_err(Failure::from))
    }

    /// The sessions in the store: `[{"id", "version", "last_event_ms"}]`.
    fn sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let store = &self.store;
        let sessions = py.detach(|| store.list_sessions());
        let sessions = raise(py, sessions.map_err(Failure::from))?;
        let values: Vec<Value> = sessions
            .iter()
            .map(|s| json!({"id": s.id, "version": s.version, "last_event_ms": s.last_event_ms}))
            .collect();
        list(py, &values)
    }

    /// Drops what the session's last call converted and decoded, and nothing else: its next call
    /// converts and decodes every message, as without reuse (a reference for tests and
    /// benchmarks).
    fn forget_converted(&self, session_id: &str) {
        self.reuse.forget(session_id);
    }

    /// Drops the in-memory state of a session (its next call reloads it from the store).
    fn evict(&self, session_id: &str) {
        self.reuse.forget(session_id);
        let _ = self.inner.evict(session_id);
    }
}
