//! The pages, as HTML strings: the session list, a session (sawtooth, cache-hit share,
//! compactions, search box), a compaction's diff with its checkpoint, an original item, and search
//! results. Every text from a session goes through [`escape`] (or [`crate::text`], which escapes);
//! every link is built from the mount point and [`encode_segment`]ed parts.

use crate::chart::{LineChart, Marker, Rule, Series};
use crate::diff::{diff, Fate};
use crate::html::{encode_segment, escape, percent, preview, thousands, utc};
use crate::overview::Overview;
use crate::text::{checkpoint, find_ignore_case, linkify, snippet};
use compact_core::model::{Item, ItemBody};
use compact_core::registry::ModelRegistry;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::record::{Record, Stored};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Characters of an item shown in a diff row.
const PREVIEW_CHARS: usize = 160;
/// At most this many search results are listed.
pub const MAX_RESULTS: usize = 100;
/// Bytes of context each side of a search match.
const SNIPPET_CONTEXT: usize = 80;
/// At most this many bytes of one item are shown on its page (a longer output says so).
pub const MAX_ITEM_BYTES: usize = 1 << 20;
/// Height of the sawtooth's plot, in view-box units.
const SAWTOOTH_HEIGHT: f64 = 260.0;
/// Height of the cache-hit share's plot.
const CACHE_HEIGHT: f64 = 90.0;

/// Links of one mounted UI: every URL starts with `base` (`""` for `compactctl ui`,
/// `/admin/ui` under the proxy).
#[derive(Debug, Clone)]
pub struct Links {
    base: String,
    review: bool,
}

impl Links {
    /// Links under `base`.
    pub fn new(base: &str) -> Links {
        Links {
            base: base.trim_end_matches('/').to_owned(),
            review: false,
        }
    }

    /// The same links, with session pages linking to their review.
    #[must_use]
    pub fn with_review(mut self) -> Links {
        self.review = true;
        self
    }

    /// A session's review of a compaction (planned, then applied with the edited checkpoint).
    pub fn review(&self, id: &str) -> String {
        format!("{}/review", self.session(id))
    }

    /// The session list.
    pub fn list(&self) -> String {
        format!("{}/", self.base)
    }

    /// A built-in asset.
    pub fn asset(&self, name: &str) -> String {
        format!("{}/assets/{name}", self.base)
    }

    /// A session's page.
    pub fn session(&self, id: &str) -> String {
        format!("{}/s/{}", self.base, encode_segment(id))
    }

    /// A compaction's diff.
    pub fn compaction(&self, id: &str, view_seq: u64) -> String {
        format!("{}/compaction/{view_seq}", self.session(id))
    }

    /// An original item.
    pub fn item(&self, id: &str, item: &str) -> String {
        format!("{}/item/{}", self.session(id), encode_segment(item))
    }

    /// The search of a session.
    pub fn search(&self, id: &str) -> String {
        format!("{}/search", self.session(id))
    }
}

/// A whole page around `body`.
pub fn page(links: &Links, title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{} · compact</title><link rel="stylesheet" href="{}"><script src="{}" defer></script></head>
<body><header><a href="{}">compact · sessions</a></header><main>
{body}
</main></body></html>
"#,
        escape(title),
        escape(&links.asset("ui.css")),
        escape(&links.asset("ui.js")),
        escape(&links.list())
    )
}

/// The session list: one row per session, filtered by `filter` (a case-insensitive substring of
/// its id, agent or model) when given; the page's script filters as one types.
pub fn list(links: &Links, sessions: &[&Overview], filter: &str) -> String {
    let needle = filter.trim().to_ascii_lowercase();
    let mut body = String::with_capacity(512 + sessions.len() * 400);
    let _ = write!(
        body,
        r#"<h1>Sessions</h1>
<form class="filter" method="get" action="{}"><input id="filter" type="search" name="q" value="{}" placeholder="filter by session, agent or model" autocomplete="off"></form>
<table id="sessions"><thead><tr><th>session</th><th>parent</th><th>agent</th><th>model</th><th class="n">calls</th><th class="n">tokens now</th><th class="n">peak</th><th class="n">compactions</th><th class="n">tokens saved</th><th>last activity</th></tr></thead><tbody>
"#,
        escape(&links.list()),
        escape(filter)
    );
    let mut shown = 0;
    for (s, depth) in
        compact_session::link::tree_order(sessions, |s| &s.id, |s| s.parent.as_deref())
    {
        let key = format!("{} {} {}", s.id, s.agent, s.model).to_ascii_lowercase();
        if !needle.is_empty() && !key.contains(&needle) {
            continue;
        }
        shown += 1;
        let _ = writeln!(
            body,
            r#"<tr data-key="{}"><td>{}<a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td></tr>"#,
            escape(&key),
            "↳ ".repeat(depth),
            escape(&links.session(&s.id)),
            escape(&s.id),
            s.parent.as_deref().map_or_else(String::new, |p| format!(
                r#"<a class="parent" href="{}">{}</a>"#,
                escape(&links.session(p)),
                escape(p)
            )),
            escape(&s.agent),
            escape(&s.model),
            s.calls.len(),
            thousands(s.tokens_now() as u64),
            thousands(s.tokens_peak() as u64),
            s.compactions.len(),
            thousands(s.tokens_saved() as u64),
            s.last_ms.map_or_else(|| "-".to_owned(), utc)
        );
    }
    body.push_str("</tbody></table>\n");
    let _ = write!(
        body,
        r#"<p class="muted" id="count">{shown} of {} sessions</p>"#,
        sessions.len()
    );
    page(links, "sessions", &body)
}

/// The sawtooth of a session: tokens sent per call against the window and trigger, compactions
/// as markers linked to their diffs.
fn sawtooth(links: &Links, o: &Overview) -> String {
    let last = o.calls.last();
    let mut rules = Vec::new();
    if let Some(w) = last.and_then(|c| c.window) {
        rules.push(Rule {
            label: format!("window {}", thousands(w as u64)),
            value: w as f64,
            color: "#c0392b",
        });
    }
    if let Some(t) = last.and_then(|c| c.trigger) {
        rules.push(Rule {
            label: format!("trigger {}", thousands(t as u64)),
            value: t as f64,
            color: "#e69f00",
        });
    }
    let markers = o
        .compactions
        .iter()
        .map(|c| Marker {
            x: c.call.min(o.calls.len().saturating_sub(1)),
            from: c.tokens_before as f64,
            to: c.tokens_after as f64,
            title: format!(
                "call {}: {} ({}{}) {} -> {} tokens",
                c.call + 1,
                c.strategy,
                c.trigger,
                if c.tiers.is_empty() {
                    String::new()
                } else {
                    format!(", {}", c.tiers.join(" + "))
                },
                thousands(c.tokens_before as u64),
                thousands(c.tokens_after as u64)
            ),
            href: Some(links.compaction(&o.id, c.view_seq)),
            id: c.view_seq.to_string(),
        })
        .collect();
    LineChart {
        class: "sawtooth",
        title: format!("tokens per call of {}", o.id),
        height: SAWTOOTH_HEIGHT,
        y_max: 0.0,
        series: vec![Series {
            name: "tokens sent".to_owned(),
            values: o.calls.iter().map(|c| Some(c.tokens as f64)).collect(),
        }],
        rules,
        markers,
        percent: false,
        ..LineChart::default()
    }
    .render()
}

/// A session's page.
pub fn session(links: &Links, o: &Overview) -> String {
    let mut body = String::with_capacity(8_192 + o.calls.len() * 40);
    let _ = write!(
        body,
        r#"<h1>Session <code>{}</code></h1>{}
<p class="stats">{} · {} · {} calls · {} items · now {} tokens · peak {} · {} compactions · {} tokens saved · prefix reused {}{}</p>
<form class="search" method="get" action="{}"><input id="search" type="search" name="q" placeholder="search the whole session log" autocomplete="off"> <button type="submit">search</button></form><div id="live"></div>
<h2>Tokens per call</h2>
"#,
        escape(&o.id),
        o.parent.as_deref().map_or_else(String::new, |p| format!(
            r#"<p class="stats">subagent of <a class="parent" href="{}"><code>{}</code></a></p>"#,
            escape(&links.session(p)),
            escape(p)
        )),
        escape(if o.agent.is_empty() { "-" } else { &o.agent }),
        escape(if o.model.is_empty() { "-" } else { &o.model }),
        o.calls.len(),
        o.items,
        thousands(o.tokens_now() as u64),
        thousands(o.tokens_peak() as u64),
        o.compactions.len(),
        thousands(o.tokens_saved() as u64),
        percent(o.cache_share()),
        o.last_ms
            .map_or_else(String::new, |ms| format!(" · last activity {}", utc(ms))),
        escape(&links.search(&o.id))
    );
    body.push_str(&sawtooth(links, o));
    body.push_str("\n<h2>Cache-hit share per call</h2>\n");
    let measured = o.cache_measured();
    if measured > 0 {
        let _ = writeln!(
            body,
            "<p class=\"muted\" id=\"cache-source\">The share of each request the provider read from its prompt cache, as its usage reported ({measured} of {} calls); a call without a report shows the share that repeats the previous request's prefix exactly, estimated from the items it reused.</p>",
            o.calls.len()
        );
    } else {
        body.push_str("<p class=\"muted\" id=\"cache-source\">The share of each request that repeats the previous request's prefix exactly (what a provider's prompt cache can serve), estimated from the items each call reused: no provider usage was recorded for this session.</p>\n");
    }
    body.push_str(
        &LineChart {
            class: "cache",
            title: "cache-hit share per call".to_owned(),
            height: CACHE_HEIGHT,
            y_max: 1.0,
            series: vec![Series {
                name: "prefix reused".to_owned(),
                values: o.calls.iter().map(|c| Some(c.cache_share)).collect(),
            }],
            rules: Vec::new(),
            markers: Vec::new(),
            percent: true,
            ..LineChart::default()
        }
        .render(),
    );
    body.push_str("\n<h2>Compactions</h2>\n");
    if links.review {
        let _ = write!(
            body,
            r#"<p><a id="review-link" href="{}">Review a compaction now</a> <span class="muted">(plan one, read and edit its checkpoint, then apply it)</span></p>"#,
            escape(&links.review(&o.id))
        );
    }
    if o.compactions.is_empty() {
        body.push_str("<p class=\"muted\">No compaction yet.</p>\n");
    } else {
        body.push_str(r#"<table id="compactions"><thead><tr><th class="n">call</th><th>trigger</th><th>strategy</th><th>tiers</th><th class="n">before</th><th class="n">after</th><th class="n">saved</th><th class="n">items changed</th><th></th></tr></thead><tbody>"#);
        for c in &o.compactions {
            let _ = write!(
                body,
                r#"<tr><td class="n">{}</td><td>{}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td><a class="open-diff" href="{}">diff</a></td></tr>"#,
                c.call + 1,
                escape(&c.trigger),
                escape(&c.strategy),
                escape(&c.tiers.join(", ")),
                thousands(c.tokens_before as u64),
                thousands(c.tokens_after as u64),
                thousands(c.tokens_before.saturating_sub(c.tokens_after) as u64),
                c.items_compressed,
                escape(&links.compaction(&o.id, c.view_seq))
            );
        }
        body.push_str("</tbody></table>\n");
    }
    page(links, &o.id, &body)
}

/// Cited form → item id, for every item of the log.
fn citations(records: &[Stored]) -> HashMap<String, String> {
    records
        .iter()
        .filter_map(|s| match &s.record {
            Record::Item(r) => Some((r.item.meta.id.cited(), r.item.meta.id.as_str().to_owned())),
            _ => None,
        })
        .collect()
}

fn kind(item: &Item) -> String {
    let kind = item.kind().as_str();
    match item.body() {
        ItemBody::ToolCall(c) => format!("{kind}({})", c.name),
        _ => kind.to_owned(),
    }
}

/// A compaction's diff page; `None` when `view_seq` names no view of the log.
pub fn compaction(
    links: &Links,
    o: &Overview,
    records: &[Stored],
    view_seq: u64,
) -> Option<String> {
    let d = diff(records, view_seq)?;
    let info = o.compactions.iter().find(|c| c.view_seq == view_seq);
    let link = |item: &str| Some(links.item(&o.id, item));
    let cites = citations(records);
    let cite = |c: &str| cites.get(c).map(|id| links.item(&o.id, id));
    let mut body = String::with_capacity(4_096 + d.rows.len() * 400);
    let _ = write!(
        body,
        r#"<p><a href="{}">← session <code>{}</code></a></p><h1>Compaction at record {view_seq}</h1>"#,
        escape(&links.session(&o.id)),
        escape(&o.id)
    );
    if let Some(c) = info {
        let _ = write!(
            body,
            r#"<p class="stats">call {} · {} · strategy {} · tiers {} · {} → {} tokens · summariser {}</p>"#,
            c.call + 1,
            escape(&c.trigger),
            escape(&c.strategy),
            escape(
                if c.tiers.is_empty() {
                    "-".to_owned()
                } else {
                    c.tiers.join(", ")
                }
                .as_str()
            ),
            thousands(c.tokens_before as u64),
            thousands(c.tokens_after as u64),
            escape(if c.summarizer.is_empty() {
                "-"
            } else {
                &c.summarizer
            })
        );
    }
    body.push_str(r#"<p class="legend">"#);
    for fate in Fate::ALL {
        let _ = write!(
            body,
            r#"<span class="fate {0}">{0} {1}</span> "#,
            fate.as_str(),
            d.count(fate)
        );
    }
    body.push_str("</p>\n<h2>Checkpoint</h2>\n");
    if d.checkpoints.is_empty() {
        body.push_str("<p class=\"muted\">This compaction wrote no checkpoint.</p>\n");
    }
    for cp in &d.checkpoints {
        if let ItemBody::Checkpoint(c) = cp.body() {
            let _ = write!(
                body,
                r#"<p class="muted">generation {}, covers {} items</p><pre class="checkpoint">{}</pre>"#,
                c.generation,
                c.covers.len(),
                checkpoint(&c.text, &cite, &link)
            );
        }
    }
    body.push_str(r#"<h2>Items</h2><table id="diff"><thead><tr><th>fate</th><th>item</th><th>kind</th><th class="n">tokens before</th><th class="n">after</th><th>before</th><th>after</th></tr></thead><tbody>"#);
    // Sizes in the session model's tokens (o200k when the model is unknown), as `compactctl diff`.
    let counter = ModelRegistry::builtin()
        .lookup(&o.model)
        .map_or_else(|| TokenCounter::new(Encoding::O200kBase), |m| m.counter());
    for row in &d.rows {
        let item = row.before.or(row.after);
        let Some(item) = item else { continue };
        let id = item.meta.id.as_str();
        let before_text = row.before.map(Item::plain_text).unwrap_or_default();
        let after_text = row.after.map(Item::plain_text).unwrap_or_default();
        let after_cell = match row.fate {
            Fate::Kept => String::from("<span class=\"muted\">unchanged</span>"),
            Fate::Summarised | Fate::Dropped => String::new(),
            // The ids a stub or marker names are linked where the preview shows them; the item's
            // own original (the log keeps every received item whole) is linked in any case, since
            // a truncation marker sits in the middle of the text.
            _ => format!(
                r#"{} <a class="recall original" href="{}">original</a>"#,
                linkify(&preview(&after_text, PREVIEW_CHARS * 2), &link),
                escape(&links.item(&o.id, id))
            ),
        };
        let _ = writeln!(
            body,
            r#"<tr class="fate {0}" data-fate="{0}"><td>{0}</td><td><a class="item" href="{1}"><code>{2}</code></a></td><td>{3}</td><td class="n">{4}</td><td class="n">{5}</td><td>{6}</td><td>{7}</td></tr>"#,
            row.fate.as_str(),
            escape(&links.item(&o.id, id)),
            escape(id),
            escape(&kind(item)),
            row.before.map_or_else(
                || "-".to_owned(),
                |i| thousands(counter.count_item(i) as u64)
            ),
            row.after.map_or_else(
                || "-".to_owned(),
                |i| thousands(counter.count_item(i) as u64)
            ),
            escape(&preview(&before_text, PREVIEW_CHARS)),
            after_cell
        );
    }
    body.push_str("</tbody></table>\n");
    Some(page(
        links,
        &format!("{} compaction {view_seq}", o.id),
        &body,
    ))
}

/// An original item's page.
pub fn item(links: &Links, session: &str, item: &Item) -> String {
    let text = match item.body() {
        ItemBody::Checkpoint(c) => c.text.clone(),
        _ => item.plain_text(),
    };
    let cut = text.len() > MAX_ITEM_BYTES;
    let mut end = text.len().min(MAX_ITEM_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let link = |id: &str| Some(links.item(session, id));
    let mut body = format!(
        r#"<p><a href="{}">← session <code>{}</code></a></p><h1>Item <code>{}</code></h1><p class="stats">{} · role {} · {} characters</p><pre id="original" class="original">{}</pre>"#,
        escape(&links.session(session)),
        escape(session),
        escape(item.meta.id.as_str()),
        escape(&kind(item)),
        escape(&format!("{:?}", item.role()).to_ascii_lowercase()),
        thousands(text.chars().count() as u64),
        linkify(&text[..end], &link)
    );
    if cut {
        let _ = write!(
            body,
            r#"<p class="muted">Shown: the first {} bytes of {}.</p>"#,
            thousands(MAX_ITEM_BYTES as u64),
            thousands(text.len() as u64)
        );
    }
    page(links, item.meta.id.as_str(), &body)
}

/// The results of searching `records` for `query` (case-insensitive), oldest first, at most
/// [`MAX_RESULTS`]: an `<ol id="results">` and a count, the fragment both the search page and the
/// session page's live search show.
pub fn search_results(links: &Links, session: &str, records: &[Stored], query: &str) -> String {
    let needle = query.trim().to_ascii_lowercase();
    let mut out = String::from(r#"<ol id="results">"#);
    let mut results = 0;
    let mut more = false;
    for s in records.iter().filter(|_| !needle.is_empty()) {
        let Record::Item(r) = &s.record else { continue };
        let text = r.item.plain_text();
        let Some(at) = find_ignore_case(&text, &needle) else {
            continue;
        };
        if results == MAX_RESULTS {
            more = true;
            break;
        }
        results += 1;
        let id = r.item.meta.id.as_str();
        let _ = write!(
            out,
            r#"<li><a class="item" href="{}"><code>{}</code></a> {} <div class="snippet">{}</div></li>"#,
            escape(&links.item(session, id)),
            escape(id),
            escape(&kind(&r.item)),
            snippet(&text, at, needle.len(), SNIPPET_CONTEXT)
        );
    }
    out.push_str("</ol>");
    let _ = write!(
        out,
        r#"<p class="muted" id="count">{results}{} match(es)</p>"#,
        if more { "+ (the first shown)" } else { "" }
    );
    out
}

/// The search page: the box and, for a query, its results.
pub fn search(links: &Links, session: &str, records: &[Stored], query: &str) -> String {
    let mut body = format!(
        r#"<p><a href="{}">← session <code>{}</code></a></p><h1>Search</h1><form class="search" method="get" action="{}"><input id="search" type="search" name="q" value="{}" autocomplete="off"> <button type="submit">search</button></form><div id="live">"#,
        escape(&links.session(session)),
        escape(session),
        escape(&links.search(session)),
        escape(query)
    );
    if !query.trim().is_empty() {
        body.push_str(&search_results(links, session, records, query));
    }
    body.push_str("</div>");
    page(links, "search", &body)
}

/// An error page.
pub fn error(links: &Links, title: &str, message: &str) -> String {
    page(
        links,
        title,
        &format!("<h1>{}</h1><p>{}</p>", escape(title), escape(message)),
    )
}
