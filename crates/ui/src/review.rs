//! Review and edit a compaction before it applies, in the web view: `GET /s/{id}/review` plans a
//! manual compaction of the session's current view ([`CompactManager::propose`]: nothing changes)
//! and shows what each item would become and the checkpoint text in an editable box; `POST
//! /s/{id}/review` applies that proposal with the text as edited ([`CompactManager::apply`]) and
//! leads to the compaction's diff. A session that moved on in between (a call logged something) is
//! refused with 409 and a link to propose again.
//!
//! Proposals wait in memory under a random key (128 bits from the operating system): the key is
//! the only way to apply one, so a page of another origin cannot apply a compaction it never saw
//! (the servers also refuse a `POST` whose `Origin` is not their own). At most
//! [`MAX_PENDING`] wait, each for at most [`PENDING_TTL`].

use crate::html::{escape, query_param, thousands};
use crate::pages::{page, Links};
use crate::Response;
use compact_session::{CompactManager, Proposal, SessionError, Store};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Proposals kept at once; the oldest goes first.
pub const MAX_PENDING: usize = 16;
/// How long a proposal waits to be applied.
pub const PENDING_TTL: Duration = Duration::from_secs(30 * 60);
/// Largest form body read (the edited checkpoint, percent-encoded).
pub const MAX_FORM_BYTES: usize = 2 << 20;

/// Which manager compacts a session: the one its calls go through, for the window it runs at.
pub type ManagerFor =
    dyn Fn(&str) -> Result<Arc<CompactManager>, SessionError> + Send + Sync + 'static;

struct Pending {
    key: String,
    created: Instant,
    manager: Arc<CompactManager>,
    proposal: Proposal,
}

/// The review desk of a mounted UI: how to reach a session's manager, and the proposals waiting.
pub struct Review {
    manager_for: Box<ManagerFor>,
    pending: Mutex<Vec<Pending>>,
}

impl std::fmt::Debug for Review {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Review").finish_non_exhaustive()
    }
}

/// 32 hexadecimal digits from the operating system's random source.
fn new_key() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let mut key = String::with_capacity(32);
    for b in bytes {
        let _ = write!(key, "{b:02x}");
    }
    Some(key)
}

/// Equal in time independent of where `a` and `b` differ (the proxy's token comparison).
fn same_key(a: &str, b: &str) -> bool {
    compact_core::redact::same_secret(a.as_bytes(), b.as_bytes())
}

fn message(
    links: &Links,
    status: u16,
    title: &str,
    text: &str,
    back: Option<(&str, String)>,
) -> Response {
    let mut body = format!(
        "<h1>{}</h1><p id=\"message\">{}</p>",
        escape(title),
        escape(text)
    );
    if let Some((label, href)) = back {
        let _ = write!(
            body,
            r#"<p><a class="next" href="{}">{}</a></p>"#,
            escape(&href),
            escape(label)
        );
    }
    Response::html(status, page(links, title, &body))
}

impl Review {
    /// A desk that compacts each session with the manager `manager_for` returns for it.
    pub fn new(
        manager_for: impl Fn(&str) -> Result<Arc<CompactManager>, SessionError> + Send + Sync + 'static,
    ) -> Review {
        Review {
            manager_for: Box::new(manager_for),
            pending: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn keep(&self, pending: Pending) {
        let mut all = self.lock();
        all.retain(|p| p.created.elapsed() < PENDING_TTL);
        while all.len() >= MAX_PENDING {
            all.remove(0);
        }
        all.push(pending);
    }

    fn take(&self, session: &str, key: &str) -> Option<Pending> {
        let mut all = self.lock();
        all.retain(|p| p.created.elapsed() < PENDING_TTL);
        let at = all
            .iter()
            .position(|p| same_key(&p.key, key) && p.proposal.session == session)?;
        Some(all.remove(at))
    }

    fn error(links: &Links, session: &str, e: &SessionError) -> Response {
        let again = Some(("Propose again", links.review(session)));
        let back = Some(("Back to the session", links.session(session)));
        match e {
            SessionError::UnknownSession(_)
            | SessionError::Store(compact_session::StoreError::UnknownSession(_)) => {
                message(links, 404, "Not found", &e.to_string(), None)
            }
            SessionError::ProposalOutdated { .. } => {
                message(links, 409, "The session moved on", &e.to_string(), again)
            }
            SessionError::NothingPrepared(_) => {
                message(links, 409, "Nothing to compact", &e.to_string(), back)
            }
            SessionError::MalformedRequest(_) => {
                message(links, 422, "Not applied", &e.to_string(), back)
            }
            SessionError::InvalidSessionId(_) => {
                message(links, 400, "Bad session id", &e.to_string(), None)
            }
            other => message(links, 500, "Compaction failed", &other.to_string(), back),
        }
    }

    /// `GET /s/{id}/review`: plans a compaction of `session` and shows it with its checkpoint in
    /// an editable box.
    pub fn propose(&self, links: &Links, session: &str) -> Response {
        let manager = match (self.manager_for)(session) {
            Ok(m) => m,
            Err(e) => return Review::error(links, session, &e),
        };
        let proposal = match manager.propose(session) {
            Ok(p) => p,
            Err(e) => return Review::error(links, session, &e),
        };
        let Some(key) = new_key() else {
            return message(
                links,
                500,
                "No random source",
                "The operating system's random source failed: no proposal can be kept.",
                None,
            );
        };
        let body = proposal_page(links, &proposal, &key);
        self.keep(Pending {
            key,
            created: Instant::now(),
            manager,
            proposal,
        });
        Response::html(200, page(links, &format!("review {session}"), &body))
    }

    /// `POST /s/{id}/review` with `form` (`application/x-www-form-urlencoded`: `proposal`, the key
    /// the review page holds, and `checkpoint`, the text as edited): applies the proposal and
    /// answers 303 to the new compaction's diff.
    pub fn apply(&self, store: &dyn Store, links: &Links, session: &str, form: &str) -> Response {
        if form.len() > MAX_FORM_BYTES {
            return message(
                links,
                413,
                "Too large",
                &format!("A review form holds at most {MAX_FORM_BYTES} bytes."),
                None,
            );
        }
        let key = query_param(form, "proposal").unwrap_or_default();
        let Some(pending) = self.take(session, &key) else {
            return message(
                links,
                410,
                "No such proposal",
                "This proposal is not waiting any more: it was applied, it expired, or the server restarted.",
                Some(("Propose again", links.review(session))),
            );
        };
        let edited = query_param(form, "checkpoint").map(|t| t.replace("\r\n", "\n"));
        let planned = pending.proposal.checkpoint.as_deref().unwrap_or_default();
        let edit = edited
            .as_deref()
            .filter(|t| pending.proposal.checkpoint.is_some() && t.trim() != planned.trim());
        match pending.manager.apply(&pending.proposal, edit) {
            Ok(_) => {
                // The view this compaction logged: the first after the version it was proposed at.
                let target = match store.read_kind(session, pending.proposal.version, "view", 1) {
                    Ok(views) => views.first().map_or_else(
                        || links.session(session),
                        |v| links.compaction(session, v.seq),
                    ),
                    Err(_) => links.session(session),
                };
                let mut r = message(
                    links,
                    303,
                    "Applied",
                    "The compaction was applied.",
                    Some(("Open its diff", target.clone())),
                );
                r.location = Some(target);
                r
            }
            Err(e) => {
                // An edit that does not fit can be corrected: the proposal waits again.
                if matches!(e, SessionError::MalformedRequest(_)) {
                    self.keep(pending);
                }
                Review::error(links, session, &e)
            }
        }
    }
}

fn proposal_page(links: &Links, p: &Proposal, key: &str) -> String {
    let r = &p.report;
    let mut body = String::with_capacity(4_096 + p.actions.len() * 160);
    let tiers = if r.tiers_applied.is_empty() {
        "-".to_owned()
    } else {
        r.tiers_applied
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(
        body,
        r#"<p><a href="{}">← session <code>{}</code></a></p><h1>Review a compaction of <code>{}</code></h1>
<p class="stats" id="planned">planned: {} → {} tokens · strategy {} · tiers {} · summariser {} · at log record {}</p>
<p class="muted">Nothing has changed yet. Applying logs a new view (the log keeps every item as received); if a call reaches the session first, the proposal is refused and can be made again.</p>
<p class="legend">"#,
        escape(&links.session(&p.session)),
        escape(&p.session),
        escape(&p.session),
        thousands(r.tokens_before as u64),
        thousands(r.tokens_after as u64),
        escape(r.strategy.as_str()),
        escape(&tiers),
        escape(r.summarizer.as_deref().unwrap_or("-")),
        p.version
    );
    for action in [
        "keep",
        "truncate",
        "densify",
        "reference",
        "summarize",
        "drop",
    ] {
        let n = p.actions.iter().filter(|(_, a)| *a == action).count();
        if n > 0 {
            let _ = write!(body, r#"<span class="fate {action}">{action} {n}</span> "#);
        }
    }
    let _ = write!(
        body,
        r#"</p>
<form id="review" method="post" action="{}"><input type="hidden" name="proposal" value="{}">
<h2>Checkpoint</h2>
"#,
        escape(&links.review(&p.session)),
        escape(key)
    );
    match &p.checkpoint {
        Some(text) => {
            let rows = text.lines().count().clamp(8, 40);
            // The newline after the opening tag is dropped by the parser, so a text that starts
            // with one keeps it.
            let _ = write!(
                body,
                "<p class=\"muted\">The text the model will read in place of the summarised items. Edit it as needed: it is applied as written, if the view still fits the budget.</p>\n<textarea id=\"checkpoint\" name=\"checkpoint\" rows=\"{rows}\" spellcheck=\"false\">\n{}</textarea>\n",
                escape(text)
            );
        }
        None => body.push_str(
            "<p class=\"muted\" id=\"no-checkpoint\">This compaction writes no checkpoint: it applies as planned.</p>\n",
        ),
    }
    body.push_str(
        r#"<p><button type="submit" id="apply">Apply</button></p></form>
<h2>Items</h2><table id="plan"><thead><tr><th>item</th><th>planned</th></tr></thead><tbody>"#,
    );
    for (id, action) in &p.actions {
        let _ = write!(
            body,
            r#"<tr class="fate {action}"><td><a class="item" href="{}"><code>{}</code></a></td><td>{action}</td></tr>"#,
            escape(&links.item(&p.session, id)),
            escape(id)
        );
    }
    body.push_str("</tbody></table>\n");
    body
}

#[cfg(test)]
mod tests {
    use super::{new_key, same_key};

    #[test]
    fn keys_are_random_hex_and_compared_whole() {
        let (a, b) = (new_key().unwrap_or_default(), new_key().unwrap_or_default());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(same_key(&a, &a.clone()));
        assert!(!same_key(&a, &b));
        assert!(!same_key(&a, &a[..31]));
    }
}
