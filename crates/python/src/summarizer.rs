//! A Python summariser behind the engine's [`Summarizer`] trait, and a Python redaction hook
//! behind the core's `redact::Hook`.
//!
//! The engine calls the summariser while the caller's thread has released the GIL; the call takes
//! the GIL back and hands the request to `compact._runtime.call_summarizer`, which calls the
//! user's object (a `summarize(request)` method or a plain callable) and, when that returns a
//! coroutine, runs it on an event loop (the loop of an `async` caller of the manager, else a
//! private loop thread). Any exception it raises becomes a [`SummarizeError`]: the engine then
//! falls back to the deterministic checkpoint (the default `on_summarizer_failure`) and says so
//! in the report's warnings, or fails the call with `SummarizerError` under `fail`.

use crate::convert::value_to_py;
use compact_core::model::{Conversation, Format};
use compact_core::redact::Hook;
use compact_engine::{BoxFuture, SummarizeError, Summarizer, Summary, SummaryRequest};
use compact_formats::wire::encode;
use compact_llm::input::{join, render, InputLimits};
use compact_llm::template::{system_prompt, PromptSource};
use compact_llm::Template;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;
use std::sync::Arc;

/// A Python object that writes checkpoint text.
pub struct PySummarizer {
    /// The user's summariser.
    target: Py<PyAny>,
    /// `compact._runtime.call_summarizer`.
    runner: Py<PyAny>,
    /// The template the instructions are written from.
    template: Template,
    /// Its name in reports.
    name: String,
}

impl PySummarizer {
    /// Wraps `target`, called through `runner`; its instructions follow `template`.
    pub fn new(py: Python<'_>, target: Py<PyAny>, runner: Py<PyAny>, template: Template) -> Self {
        let bound = target.bind(py);
        let name = bound
            .getattr("name")
            .ok()
            .and_then(|n| n.extract::<String>().ok())
            .or_else(|| {
                bound
                    .get_type()
                    .name()
                    .ok()
                    .map(|n| n.to_string())
                    .filter(|n| n != "function")
            })
            .or_else(|| {
                bound
                    .getattr("__name__")
                    .ok()
                    .and_then(|n| n.extract::<String>().ok())
            })
            .unwrap_or_else(|| "python".to_owned());
        PySummarizer {
            target,
            runner,
            template,
            name: format!("python:{name}"),
        }
    }

    fn call(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        let conversation = Conversation {
            items: request.items.to_vec(),
            format: None,
            ..Conversation::default()
        };
        let messages = encode(&conversation, Format::OpenAiChat)
            .ok()
            .and_then(|e| e.value.get("messages").cloned())
            .unwrap_or(Value::Array(Vec::new()));
        let blocks = render(
            request.items,
            request.previous,
            &InputLimits::default(),
            &request.counter,
        );
        let material = join(&blocks);
        let instructions = system_prompt(
            &PromptSource::Builtin(self.template),
            request.also_preserve,
            request.max_tokens,
        );
        let previous = request.previous.map(|c| c.text.clone());
        Python::attach(|py| {
            let fields = PyDict::new(py);
            let set = |k: &str, v: Bound<'_, PyAny>| fields.set_item(k, v);
            let r: PyResult<Bound<'_, PyAny>> = (|| {
                set("messages", value_to_py(py, &messages)?)?;
                set("material", PyString::new(py, &material).into_any())?;
                set("instructions", PyString::new(py, &instructions).into_any())?;
                set("style", PyString::new(py, self.template.name()).into_any())?;
                fields.set_item("max_tokens", request.max_tokens)?;
                fields.set_item("previous", previous)?;
                fields.set_item("encoding", request.counter.encoding().to_string())?;
                self.runner
                    .bind(py)
                    .call1((self.target.bind(py), fields.clone()))
            })();
            match r {
                Ok(text) => match text.extract::<String>() {
                    Ok(text) if !text.trim().is_empty() => Ok(Summary {
                        text,
                        produced_by: self.name.clone(),
                        ..Summary::default()
                    }),
                    Ok(_) => Err(SummarizeError::Empty(format!(
                        "{} returned an empty summary",
                        self.name
                    ))),
                    Err(_) => Err(SummarizeError::Empty(format!(
                        "{} returned {}, not text",
                        self.name,
                        text.get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ))),
                },
                Err(e) => Err(SummarizeError::Transport(describe_exception(py, &e))),
            }
        })
    }
}

/// `Type: message` of a Python exception.
fn describe_exception(py: Python<'_>, e: &PyErr) -> String {
    let name = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    let value = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if value.is_empty() {
        name
    } else {
        format!("{name}: {value}")
    }
}

impl Summarizer for PySummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        Box::pin(async move { self.call(&request) })
    }
}

/// A Python function `hook(text) -> [(start, end, kind), ...]` (character offsets) as a
/// redaction hook. A hook that raises or returns something else redacts the whole text (kind
/// `redaction_hook_failed`): a failing hook never lets a secret through.
pub fn redaction_hook(hook: Py<PyAny>) -> Hook {
    let hook = Arc::new(hook);
    Arc::new(move |text: &str| {
        Python::attach(|py| {
            let found: PyResult<Vec<(usize, usize, String)>> = hook
                .bind(py)
                .call1((text,))
                .and_then(|r| r.extract::<Vec<(usize, usize, String)>>());
            match found {
                Ok(ranges) => {
                    // Character offsets to byte offsets.
                    let bytes: Vec<usize> = text
                        .char_indices()
                        .map(|(b, _)| b)
                        .chain(std::iter::once(text.len()))
                        .collect();
                    let mut out = Vec::with_capacity(ranges.len());
                    for (start, end, kind) in ranges {
                        match (bytes.get(start), bytes.get(end)) {
                            (Some(&s), Some(&e)) if s < e => out.push((s..e, kind)),
                            _ => return vec![(0..text.len(), "redaction_hook_failed".to_owned())],
                        }
                    }
                    out
                }
                Err(_) => vec![(0..text.len(), "redaction_hook_failed".to_owned())],
            }
        })
    })
}
