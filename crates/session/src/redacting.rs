//! [`RedactingSummarizer`]: a summariser that sees the session's text only once redacted
//! (`redaction.summarizer: true`), so a model summariser never receives a secret; the summary it
//! writes names the placeholders the log uses for that session.

use compact_core::model::{Checkpoint, Conversation, Item};
use compact_core::redact::Redactor;
use compact_engine::{BoxFuture, SummarizeError, Summarizer, Summary, SummaryRequest};
use std::sync::Arc;

/// Redacts every item, the previous checkpoint and the cache prefix of a request, with the
/// session id as salt (the same placeholders as the session's log), before `inner` sees them.
pub struct RedactingSummarizer {
    inner: Arc<dyn Summarizer>,
    redactor: Arc<Redactor>,
    salt: String,
}

impl RedactingSummarizer {
    /// `inner` behind `redactor`, salted with `session`.
    pub fn new(inner: Arc<dyn Summarizer>, redactor: Arc<Redactor>, session: &str) -> Self {
        RedactingSummarizer {
            inner,
            redactor,
            salt: session.to_owned(),
        }
    }

    fn item(&self, item: &Item) -> Item {
        let mut item = item.clone();
        self.redactor.redact_item(&self.salt, &mut item);
        item
    }
}

impl Summarizer for RedactingSummarizer {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn costs_a_call(&self) -> bool {
        self.inner.costs_a_call()
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        let items: Vec<Item> = request.items.iter().map(|i| self.item(i)).collect();
        let previous: Option<Checkpoint> = request.previous.map(|c| {
            let mut c = c.clone();
            self.redactor.redact_string(&self.salt, &mut c.text);
            c
        });
        let prefix: Option<Conversation> = request.prefix.map(|p| {
            let mut p = p.clone();
            for item in &mut p.items {
                self.redactor.redact_item(&self.salt, item);
            }
            p
        });
        let also_preserve = request.also_preserve;
        let (max_tokens, counter) = (request.max_tokens, request.counter);
        Box::pin(async move {
            let request = SummaryRequest {
                items: &items,
                previous: previous.as_ref(),
                max_tokens,
                counter,
                also_preserve,
                prefix: prefix.as_ref(),
            };
            self.inner.summarize(request).await
        })
    }
}
