//! Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! - `user` and `assistant` records hold an Anthropic `{role, content}` message, decoded by
//!   [`crate::wire::anthropic::decode_message`]. Claude Code writes one record per content block of an
//!   API response; records sharing `message.id` are one wire message: their items share one envelope
//!   and stay together even when tool results were logged between them.
//! - Item ids are record `uuid`s (`uuid.k` when one record yields several items); timestamps are the
//!   records'.
//! - `isMeta` records (context the CLI injects) are model-visible but hidden from the user.
//! - `isSidechain` records are a subagent's own conversation (its own context window, reached through
//!   the `Task` tool whose result the main conversation does hold): they are left out and counted as
//!   skipped `sidechain` records.
//! - A `system` record with `subtype: "compact_boundary"` hides every earlier item from the model (they
//!   stay in the log); the `isCompactSummary` user record after it becomes a checkpoint covering them.
//!   Other `system` records (UI notices) and `summary` records (session titles) are never sent to the
//!   model: skipped and counted.
//! - Records chain by `uuid` / `parentUuid`. The active branch is the chain that ends at the last
//!   `user`/`assistant` record; items of records off it (an abandoned branch after the user rewound and
//!   edited an earlier prompt) stay in the log but are hidden from the model. A parent the file does not
//!   hold (a resumed session) or a null parent (a compact boundary) ends the chain.
//! - Errors the file reports: `tool_result` blocks with `is_error` and `isApiErrorMessage` records.

use super::source::{lines, str_field, text_of, Ctx, Line};
use super::{item_ids, stamp, ImportError, Location};
use crate::wire::anthropic::decode_message;
use compact_core::model::{
    Checkpoint, Conversation, Envelope, Extra, Format, Item, ItemBody, ItemId,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// `subtype` of the system record that marks a compaction.
const COMPACT_BOUNDARY: &str = "compact_boundary";

/// Model name Claude Code gives messages it makes up itself (API errors, interruptions).
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// The records of one API response seen so far.
struct Group {
    /// `message.id`.
    id: String,
    /// The envelope every item of the response shares.
    env: Arc<Envelope>,
    /// Where the next item of the response goes (after the response's last item).
    end: usize,
}

/// Importer state.
#[derive(Default)]
struct State {
    conv: Conversation,
    /// Wire messages so far.
    index: u32,
    /// The latest API response.
    group: Option<Group>,
    /// Checkpoints made so far.
    checkpoints: u32,
    /// A boundary waiting for its summary: the ids it hid, and where it was.
    boundary: Option<(Vec<ItemId>, Location)>,
    /// `uuid -> parentUuid` of every main-chain record.
    parents: HashMap<String, Option<String>>,
    /// The last `user`/`assistant` record: the end of the active branch.
    leaf: Option<String>,
}

/// Imports a session file.
pub(crate) fn import(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Conversation, ImportError> {
    let mut st = State::default();
    for line in lines(bytes) {
        let Some(rec) = ctx.parse_line(&line)? else {
            continue;
        };
        let Some(ty) = str_field(&rec, "type") else {
            ctx.problem(ctx.at_line(&line, 1), "not a Claude Code record: no `type`")?;
            continue;
        };
        if rec.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            ctx.skip("sidechain");
            continue;
        }
        if let Some(uuid) = str_field(&rec, "uuid") {
            let parent = str_field(&rec, "parentUuid").map(str::to_owned);
            st.parents.insert(uuid.to_owned(), parent);
            if matches!(ty, "user" | "assistant") {
                st.leaf = Some(uuid.to_owned());
            }
        }
        match ty {
            "user" | "assistant" => st.message(&rec, ty, &line, ctx)?,
            "system" if str_field(&rec, "subtype") == Some(COMPACT_BOUNDARY) => {
                st.boundary(&line, ctx)
            }
            other => ctx.skip(other),
        }
    }
    if let Some((_, at)) = st.boundary.take() {
        ctx.warn(at, "compact boundary without a summary record");
    }
    ctx.stats.off_branch_items += st.hide_off_branch();
    Ok(st.conv)
}

impl State {
    /// Hides from the model the items of records that are not on the active branch; returns how many
    /// items it hid.
    fn hide_off_branch(&mut self) -> usize {
        let mut on_branch: HashSet<&str> = HashSet::new();
        let mut cur = self.leaf.as_deref();
        while let Some(uuid) = cur {
            if !on_branch.insert(uuid) {
                break; // a cycle: the chain is corrupt, stop here
            }
            cur = self.parents.get(uuid).and_then(|p| p.as_deref());
        }
        // A record off the branch is abandoned when its ancestry reaches the branch (it forked from
        // it). One whose ancestry ends elsewhere (a parent the file does not hold) is left alone.
        let mut abandoned: HashMap<&str, bool> = HashMap::new();
        for start in self.parents.keys() {
            let mut path: Vec<&str> = Vec::new();
            let mut cur = Some(start.as_str());
            let verdict = loop {
                let Some(uuid) = cur else { break false };
                if on_branch.contains(uuid) {
                    break !path.is_empty();
                }
                if let Some(known) = abandoned.get(uuid) {
                    break *known;
                }
                if path.len() > self.parents.len() {
                    break false; // a cycle
                }
                path.push(uuid);
                cur = self.parents.get(uuid).and_then(|p| p.as_deref());
            };
            for uuid in path {
                abandoned.insert(uuid, verdict);
            }
        }
        let mut hidden = 0;
        for item in self
            .conv
            .items
            .iter_mut()
            .filter(|i| i.meta.visibility.model)
        {
            let record = item.meta.id.as_str().split('.').next().unwrap_or_default();
            if abandoned.get(record) == Some(&true) {
                item.meta.visibility.model = false;
                hidden += 1;
            }
        }
        hidden
    }

    /// A `compact_boundary` record: everything model-visible so far is hidden.
    fn boundary(&mut self, line: &Line<'_>, ctx: &mut Ctx<'_>) {
        ctx.stats.compactions += 1;
        let covers = hide_all(&mut self.conv);
        self.boundary = Some((covers, ctx.at_line(line, 1)));
        self.group = None;
    }

    /// A `user` or `assistant` record.
    fn message(
        &mut self,
        rec: &Value,
        ty: &str,
        line: &Line<'_>,
        ctx: &mut Ctx<'_>,
    ) -> Result<(), ImportError> {
        let Some(msg) = rec.get("message") else {
            ctx.problem(
                ctx.at_line(line, 1),
                format!("`{ty}` record without `message`"),
            )?;
            return Ok(());
        };
        let base =
            str_field(rec, "uuid").map_or_else(|| format!("L{}", line.number), str::to_owned);
        let ts = str_field(rec, "timestamp");
        if rec.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            self.checkpoint(msg, base, ts, ctx);
            return Ok(());
        }
        let mut items = Vec::new();
        if let Err(e) = decode_message(&request_message(msg), self.index, "/message", &mut items) {
            ctx.decode_problem(ctx.at_line(line, 1), e)?;
            return Ok(());
        }
        let meta = rec.get("isMeta").and_then(Value::as_bool) == Some(true);
        if rec.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            ctx.stats.errors += 1;
        }
        let ids = item_ids(&base, items.len());
        for (item, id) in items.iter_mut().zip(ids) {
            stamp(item, id, ts, Format::ClaudeCode);
            if meta {
                item.meta.visibility.user = false;
            }
            if item.as_tool_result().is_some_and(|r| r.is_error) {
                ctx.stats.errors += 1;
            }
        }
        let response_id = if ty == "assistant" {
            str_field(msg, "id")
        } else {
            None
        };
        if let Some(model) = msg
            .get("model")
            .filter(|m| m.as_str().is_some_and(|m| m != SYNTHETIC_MODEL))
        {
            self.conv
                .extra
                .entry("model")
                .or_insert_with(|| model.clone());
        }
        match (response_id, &mut self.group) {
            (Some(id), Some(group)) if group.id == id => {
                let n = items.len();
                for item in &mut items {
                    item.meta.envelope = Some(Arc::clone(&group.env));
                }
                let at = group.end.min(self.conv.items.len());
                self.conv.items.splice(at..at, items);
                group.end = at + n;
            }
            _ => {
                self.index += 1;
                if let Some(id) = response_id {
                    let env = items
                        .first()
                        .and_then(|i| i.meta.envelope.clone())
                        .unwrap_or_else(|| Arc::new(Envelope::default()));
                    let end = self.conv.items.len() + items.len();
                    self.group = Some(Group {
                        id: id.to_owned(),
                        env,
                        end,
                    });
                } else if ty == "assistant" {
                    self.group = None;
                }
                self.conv.items.extend(items);
            }
        }
        Ok(())
    }

    /// An `isCompactSummary` record: the checkpoint standing for everything before it.
    fn checkpoint(&mut self, msg: &Value, id: String, ts: Option<&str>, ctx: &mut Ctx<'_>) {
        let covers = match self.boundary.take() {
            Some((covers, _)) => covers,
            None => {
                ctx.stats.compactions += 1;
                hide_all(&mut self.conv)
            }
        };
        self.checkpoints += 1;
        let text = msg.get("content").map(text_of).unwrap_or_default();
        let mut item = Item::new(ItemBody::Checkpoint(Checkpoint {
            text,
            generation: self.checkpoints,
            covers,
            extra: Extra::new(),
        }));
        stamp(&mut item, id, ts, Format::ClaudeCode);
        self.conv.items.push(item);
        self.group = None;
    }
}

/// Hides every model-visible item from the model; returns their ids.
fn hide_all(conv: &mut Conversation) -> Vec<ItemId> {
    let mut covers = Vec::new();
    for item in conv.items.iter_mut().filter(|i| i.meta.visibility.model) {
        item.meta.visibility.model = false;
        covers.push(item.meta.id.clone());
    }
    covers
}

/// The part of a recorded API message that belongs in a request: `role` and `content`. The rest
/// (`id`, `model`, `usage`, `stop_reason`, ...) describes the response and the API rejects it in a
/// request, so it is not carried into the conversation. A non-object is passed through for the
/// decoder to report.
fn request_message(msg: &Value) -> Value {
    match msg.as_object() {
        Some(obj) => Value::Object(
            obj.iter()
                .filter(|(k, _)| matches!(k.as_str(), "role" | "content"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        None => msg.clone(),
    }
}
