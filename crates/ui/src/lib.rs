//! Compact's web view: pages over a session store, rendered on the server as HTML strings with
//! inline SVG charts drawn in Rust, one small built-in script and one stylesheet.
//!
//! - [`Ui::handle`] is the router: a path (below the mount point) and a query in, a [`Response`]
//!   out. It reads the store and renders; it does no other I/O, so `compactctl ui` ([`serve`])
//!   and the proxy's `/admin/ui/` routes serve the same pages. Its only state is a cache of the
//!   list's rows by log version and, with a review desk, the proposals waiting.
//! - Pages: the session list (`/`), a session (`/s/{id}`: the token sawtooth against the window
//!   and trigger, compaction markers, the cache-hit share per call, the compactions), a
//!   compaction's diff and checkpoint (`/s/{id}/compaction/{record}`), an original item
//!   (`/s/{id}/item/{ref}`: the recall of what a stub, marker or citation names) and search
//!   (`/s/{id}/search?q=`; `&part=results` answers the results alone, for the search as one
//!   types).
//! - With a [`review::Review`] desk ([`Ui::with_review`]): `/s/{id}/review` plans a compaction and
//!   shows it with its checkpoint to edit; [`Ui::handle_post`] applies it as edited.
//!
//! Architecture invariants: **transcript text is hostile**: every text goes through
//! [`html::escape`], every link is built from fixed parts and percent-encoded segments, and every
//! page is sent with [`CONTENT_SECURITY_POLICY`] (no inline script, nothing from another origin),
//! so a planted `<script>` is shown as text and never runs. **Nothing is fetched at run time**: the
//! script and stylesheet are compiled in (`include_str!`). **Bounded**: request targets over
//! [`MAX_TARGET_BYTES`] and queries over [`MAX_QUERY_CHARS`] are refused, results are capped
//! ([`pages::MAX_RESULTS`]), an item's page shows at most [`pages::MAX_ITEM_BYTES`], a form at most
//! [`review::MAX_FORM_BYTES`]. **Read only but for review**: GET never appends to a log (recall
//! reads the store, it logs no event); the one write is a reviewed compaction, by `POST`, through
//! the session's manager, and only with the random key of a proposal the page was shown.
//!
//! ```
//! use compact_session::MemoryStore;
//! use compact_ui::Ui;
//!
//! let store = MemoryStore::new();
//! let ui = Ui::new("");
//! let page = ui.handle(&store, "/", "");
//! assert_eq!(page.status, 200);
//! assert!(page.body.contains("Sessions"));
//! assert_eq!(ui.handle(&store, "/s/nope", "").status, 404);
//! ```

pub mod chart;
pub mod diff;
pub mod html;
pub mod overview;
pub mod pages;
pub mod review;
mod serve;
pub mod text;

pub use overview::Overview;
pub use pages::Links;
pub use review::Review;
pub use serve::{http_response, is_loopback_host, read_form, same_origin, serve, ServeError};

use compact_session::{Store, StoreError};
use html::{percent_decode, query_param};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The policy every page is served with: its own script and stylesheet only, images from itself
/// or `data:`, requests (the live search) and forms to itself only, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Longest request target (path and query) answered; longer ones get 414.
pub const MAX_TARGET_BYTES: usize = 8 * 1024;

/// Longest filter or search query, in characters; longer ones get 400.
pub const MAX_QUERY_CHARS: usize = 256;

/// The built-in script (the list's filter and the session's search, as one types).
pub const SCRIPT: &str = include_str!("../assets/ui.js");
/// The built-in stylesheet.
pub const STYLESHEET: &str = include_str!("../assets/ui.css");

/// An answer of the router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
    /// Where a `303 See Other` leads (after a reviewed compaction applies).
    pub location: Option<String>,
}

impl Response {
    /// An HTML page with `status`.
    pub(crate) fn html(status: u16, body: String) -> Response {
        Response {
            status,
            content_type: HTML,
            body,
            location: None,
        }
    }

    /// The headers every answer carries besides its content type: the content security policy,
    /// no sniffing, no referrer to other sites, no caching (pages show live logs), no framing.
    pub fn headers(&self) -> [(&'static str, &'static str); 5] {
        [
            ("content-security-policy", CONTENT_SECURITY_POLICY),
            ("x-content-type-options", "nosniff"),
            // `same-origin`: nothing is sent to other sites, and the browser still names the
            // page's own origin on its form's POST (under `no-referrer` it sends `Origin: null`).
            ("referrer-policy", "same-origin"),
            ("cache-control", "no-store"),
            ("x-frame-options", "DENY"),
        ]
    }
}

pub(crate) const HTML: &str = "text/html; charset=utf-8";

/// What a compaction's diff reads: the session's overview (its events), every item, and only the
/// view `seq` and the view before it, found by number without decoding the others (a long session
/// holds hundreds, and decoding them was half of the page's time). `None` when no view has that
/// number.
fn compaction_records(
    store: &dyn Store,
    id: &str,
    seq: u64,
) -> Result<Option<(Overview, Vec<compact_session::record::Stored>)>, StoreError> {
    let seqs = store.seqs_of_kind(id, "view")?;
    let Some(at) = seqs.iter().position(|s| *s == seq) else {
        return Ok(None);
    };
    let o = Overview::load(store, id)?;
    let mut records = store.read_kind(id, 0, "item", usize::MAX)?;
    if let Some(previous) = at.checked_sub(1).map(|i| seqs[i]) {
        records.extend(store.read_kind(id, previous - 1, "view", 1)?);
    }
    records.extend(store.read_kind(id, seq - 1, "view", 1)?);
    Ok(Some((o, records)))
}

/// The router of one mounted UI.
#[derive(Debug, Clone)]
pub struct Ui {
    links: Links,
    review: Option<Arc<Review>>,
    /// The list's rows by session, with the log version they were read at: the list reads again
    /// only the sessions whose log moved on (shared by the clones of this UI).
    overviews: Arc<Mutex<Overviews>>,
}

/// Session id → (log version, its overview).
type Overviews = HashMap<String, (u64, Arc<Overview>)>;

impl Ui {
    /// A UI whose pages link under `base` (`""` at the root, `/admin/ui` under the proxy).
    pub fn new(base: &str) -> Ui {
        Ui {
            links: Links::new(base),
            review: None,
            overviews: Arc::default(),
        }
    }

    /// The same UI with reviewed compactions: session pages link to `/s/{id}/review`, and
    /// [`Ui::handle_post`] applies what it proposes.
    #[must_use]
    pub fn with_review(mut self, review: Arc<Review>) -> Ui {
        self.links = self.links.with_review();
        self.review = Some(review);
        self
    }

    /// True when the UI has a review desk (and so answers its form's `POST`).
    pub fn reviews(&self) -> bool {
        self.review.is_some()
    }

    /// Answers a `POST` of `path` with `form` (its `application/x-www-form-urlencoded` body): only
    /// `/s/{id}/review` takes one, when the UI has a review desk. The server checks the origin.
    pub fn handle_post(&self, store: &dyn Store, path: &str, form: &str) -> Response {
        if path.len() > MAX_TARGET_BYTES {
            return self.page(414, "Request too long", "The address is too long.");
        }
        let segments = match self.segments(path) {
            Ok(s) => s,
            Err(refused) => return refused,
        };
        let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
        match (parts.as_slice(), &self.review) {
            (["s", id, "review"], Some(review)) => review.apply(store, &self.links, id, form),
            _ => self.page(405, "Not allowed", "This page is not a form."),
        }
    }

    /// The percent-decoded segments of `path`; a 400 page when one is not valid UTF-8.
    fn segments(&self, path: &str) -> Result<Vec<String>, Response> {
        path.split('/')
            .filter(|s| !s.is_empty())
            .map(|s| percent_decode(s, false))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| {
                self.page(
                    400,
                    "Bad address",
                    "The path is not valid percent-encoded UTF-8.",
                )
            })
    }

    fn page(&self, status: u16, title: &str, message: &str) -> Response {
        Response::html(status, pages::error(&self.links, title, message))
    }

    fn store_error(&self, e: &StoreError) -> Response {
        match e {
            StoreError::UnknownSession(s) => {
                self.page(404, "Not found", &format!("No session `{s}`."))
            }
            other => self.page(500, "Store error", &other.to_string()),
        }
    }

    /// Answers a GET of `path` (below the mount point, starting with `/`) with `query` (the raw
    /// query string, without `?`).
    pub fn handle(&self, store: &dyn Store, path: &str, query: &str) -> Response {
        if path.len() + query.len() > MAX_TARGET_BYTES {
            return self.page(414, "Request too long", "The address is too long.");
        }
        let q = query_param(query, "q").unwrap_or_default();
        if q.chars().count() > MAX_QUERY_CHARS {
            return self.page(
                400,
                "Query too long",
                &format!("A query holds at most {MAX_QUERY_CHARS} characters."),
            );
        }
        let segments = match self.segments(path) {
            Ok(s) => s,
            Err(refused) => return refused,
        };
        let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
        match parts.as_slice() {
            [] => self.list(store, &q),
            ["assets", "ui.js"] => Response {
                status: 200,
                content_type: "text/javascript; charset=utf-8",
                body: SCRIPT.to_owned(),
                location: None,
            },
            ["assets", "ui.css"] => Response {
                status: 200,
                content_type: "text/css; charset=utf-8",
                body: STYLESHEET.to_owned(),
                location: None,
            },
            ["s", id] => match Overview::load(store, id) {
                Ok(o) => Response::html(200, pages::session(&self.links, &o)),
                Err(e) => self.store_error(&e),
            },
            ["s", id, "compaction", seq] => {
                let Ok(seq) = seq.parse::<u64>() else {
                    return self.page(
                        404,
                        "Not found",
                        "A compaction is named by its record number.",
                    );
                };
                match compaction_records(store, id, seq) {
                    Ok(found) => match found
                        .and_then(|(o, records)| pages::compaction(&self.links, &o, &records, seq))
                    {
                        Some(body) => Response::html(200, body),
                        None => self.page(
                            404,
                            "Not found",
                            &format!("Session `{id}` has no compaction at record {seq}."),
                        ),
                    },
                    Err(e) => self.store_error(&e),
                }
            }
            ["s", id, "item", reference] => {
                match compact_session::archive::recall(store, None, id, reference) {
                    Ok(Some(item)) => Response::html(200, pages::item(&self.links, id, &item)),
                    Ok(None) => self.page(
                        404,
                        "Not found",
                        &format!("Session `{id}` has no item `{reference}`."),
                    ),
                    Err(compact_session::ArchiveError::Store(e)) => self.store_error(&e),
                    Err(e) => self.page(500, "Recall failed", &e.to_string()),
                }
            }
            ["s", id, "review"] => match &self.review {
                Some(review) => review.propose(&self.links, id),
                None => self.page(404, "Not found", "This server does not review compactions."),
            },
            ["s", id, "search"] => match store.read_kind(id, 0, "item", usize::MAX) {
                // `part=results`: only the results, for the live search as one types.
                Ok(records) if query_param(query, "part").as_deref() == Some("results") => {
                    Response::html(200, pages::search_results(&self.links, id, &records, &q))
                }
                Ok(records) => Response::html(200, pages::search(&self.links, id, &records, &q)),
                Err(e) => self.store_error(&e),
            },
            _ => self.page(404, "Not found", "No such page."),
        }
    }

    fn list(&self, store: &dyn Store, filter: &str) -> Response {
        let summaries = match store.list_sessions() {
            Ok(s) => s,
            Err(e) => return self.store_error(&e),
        };
        let mut cached = self
            .overviews
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Sessions deleted since the last list leave the cache.
        cached.retain(|id, _| summaries.iter().any(|s| &s.id == id));
        let mut sessions: Vec<Arc<Overview>> = Vec::with_capacity(summaries.len());
        for s in summaries {
            if let Some((version, o)) = cached.get(&s.id) {
                if *version == s.version {
                    sessions.push(Arc::clone(o));
                    continue;
                }
            }
            match Overview::load(store, &s.id) {
                Ok(o) => {
                    let o = Arc::new(o);
                    cached.insert(s.id, (s.version, Arc::clone(&o)));
                    sessions.push(o);
                }
                Err(StoreError::UnknownSession(_)) => {} // Deleted since it was listed.
                Err(e) => return self.store_error(&e),
            }
        }
        drop(cached);
        let sessions: Vec<&Overview> = sessions.iter().map(AsRef::as_ref).collect();
        Response::html(200, pages::list(&self.links, &sessions, filter))
    }
}
