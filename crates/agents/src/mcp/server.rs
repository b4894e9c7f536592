//! The MCP server: four tools over one session ([`super::source::Source`]), served over stdio (or
//! streamable HTTP, [`super::http`]) with the official SDK (`rmcp`).

use super::page::page;
use super::search::search;
use super::source::{History, Source};
use super::{
    DEFAULT_CHECKPOINT_TOKENS, DEFAULT_SEARCH_LIMIT, MAX_CHECKPOINT_TOKENS, MAX_RESULT_CHARS,
    MAX_SEARCH_LIMIT,
};
use crate::error::AgentsError;
use compact_core::budget::Budget;
use compact_core::checkpoint::{build, CheckpointOptions};
use compact_core::model::{Conversation, Item, ItemBody};
use compact_core::policy::Policy;
use compact_core::registry::ModelRegistry;
use compact_core::tokens::{Encoding, TokenCounter};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Room for a text field in a result: the result's limit less its other fields.
const MAX_CONTENT_CHARS: usize = MAX_RESULT_CHARS - 400;

/// Arguments of `recall`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The item id: as a checkpoint cites it (`[1a2b3c4d]`, without brackets), as a truncation
    /// marker or reference stub names it, or as `search_history` returns it.
    pub reference: String,
    /// Where to continue a long item: the `next_cursor` of the previous call.
    #[serde(default)]
    pub cursor: Option<usize>,
}

/// Arguments of `search_history`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words to look for: file names, function names, error text, commands.
    pub query: String,
    /// Most results to return (1 to 50, default 10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Where to continue: the `next_cursor` of the previous call.
    #[serde(default)]
    pub cursor: Option<usize>,
}

/// Arguments of `checkpoint`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointArgs {
    /// Largest size of the checkpoint in tokens (200 to 20000, default 3000).
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// Where to continue a long checkpoint: the cursor its last line names.
    #[serde(default)]
    pub cursor: Option<usize>,
}

/// Arguments of `memory`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryArgs {
    /// Also list the facts no longer trusted (stale, superseded, forgotten); default false.
    #[serde(default)]
    pub all: Option<bool>,
    /// Where to continue: the cursor the last line names.
    #[serde(default)]
    pub cursor: Option<usize>,
}

/// Arguments of `context_status` (none).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

type Cached = Option<((PathBuf, u64, Option<SystemTime>), Arc<History>)>;

/// The server: a source and the last history read from it.
#[derive(Clone)]
pub struct CompactServer {
    source: Arc<Source>,
    /// The store `compactctl run` keeps cut outputs in, for `recall` of the ids its markers name.
    runs: Option<Arc<dyn compact_session::Store>>,
    cache: Arc<Mutex<Cached>>,
    tool_router: ToolRouter<Self>,
}

/// What the server tells the model when it connects.
const INSTRUCTIONS: &str = "Compact keeps the full log of this session, including what the agent's \
compaction removed from your context. Use search_history to find an earlier error, command, file or \
decision by words; recall to read one item whole by its id (ids appear in search results, in \
Compact's checkpoints as [id], and in truncation markers); context_status to see how full the \
window is; checkpoint for a compact record of the work so far (failed approaches, files changed, \
decisions, task list); memory for the facts remembered across compactions (constraints, decisions, \
file states, errors), each with the ids of the items it came from.";

fn text(value: &Value) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(value.to_string())])
}

/// A call the model can correct (a bad argument, an unknown id): a tool error it reads, as the
/// SDK reports arguments that do not deserialise, rather than a protocol error.
/// The page of `text` from `cursor` as a plain-text result; when more follows, a last line says
/// how to get it (`[continued: {again} N]`). A bad cursor is a tool error.
fn text_page(text: &str, cursor: Option<usize>, again: &str) -> CallToolResult {
    let page = match page(text, cursor.unwrap_or(0), MAX_CONTENT_CHARS) {
        Ok(page) => page,
        Err(message) => return tool_error(message),
    };
    let mut out = page.text;
    if let Some(next) = page.next {
        out.push_str(&format!("\n[continued: {again} {next}]"));
    }
    CallToolResult::success(vec![ContentBlock::text(out)])
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn internal(e: &AgentsError) -> ErrorData {
    ErrorData::internal_error(format!("cannot read the session: {e}"), None)
}

#[tool_router]
impl CompactServer {
    /// A server over `source`.
    pub fn new(source: Source) -> CompactServer {
        CompactServer {
            source: Arc::new(source),
            runs: None,
            cache: Arc::new(Mutex::new(None)),
            tool_router: Self::tool_router(),
        }
    }

    /// The same server, also recalling the outputs `compactctl run` kept in `store`.
    pub fn with_runs(mut self, store: Arc<dyn compact_session::Store>) -> CompactServer {
        self.runs = Some(store);
        self
    }

    /// The session now (read again when the transcript changed, always for a store).
    pub fn history(&self) -> Result<Arc<History>, AgentsError> {
        let version = self.source.version();
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(v), Some((key, history))) = (&version, cache.as_ref()) {
            if v == key {
                return Ok(Arc::clone(history));
            }
        }
        let history = Arc::new(self.source.load()?);
        *cache = version.map(|v| (v, Arc::clone(&history)));
        Ok(history)
    }

    #[tool(
        description = "Return the original, full content of one earlier item of this session (a tool \
output, a message, a tool call) by its id, even if compaction removed or shortened it. Ids come \
from search_history results, from [id] citations in checkpoints and from truncation markers. Long \
items come in pages: pass next_cursor back as cursor."
    )]
    async fn recall(
        &self,
        Parameters(args): Parameters<RecallArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let reference = args
            .reference
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if reference.is_empty() {
            return Ok(tool_error("`reference` is empty".to_owned()));
        }
        let history = self.history().map_err(|e| internal(&e))?;
        let mut item = history.recall(reference).map_err(|e| internal(&e))?;
        if let (None, Some(runs)) = (&item, &self.runs) {
            item = crate::run::recall_kept(runs, reference).map_err(|e| internal(&e))?;
        }
        let Some(item) = item else {
            return Ok(tool_error(format!(
                "no item with id `{}` in {} ({} items); search_history finds ids",
                clip(reference, 80),
                history.origin,
                history.conversation.len()
            )));
        };
        let content = item.plain_text();
        let page = match page(&content, args.cursor.unwrap_or(0), MAX_CONTENT_CHARS) {
            Ok(page) => page,
            Err(message) => return Ok(tool_error(message)),
        };
        Ok(text(&json!({
            "id": item.meta.id.as_str(),
            "kind": item.kind().as_str(),
            "role": item.role().as_str(),
            "characters": page.total,
            "from": args.cursor.unwrap_or(0),
            "content": page.text,
            "next_cursor": page.next,
        })))
    }

    #[tool(
        description = "Search the whole log of this session, including everything compaction removed \
from your context, for words (file names, function names, error messages, commands). Returns the \
best matches first (BM25), each with its item id, whether it is still in your context, and a \
snippet; read one whole with recall(id). Pass next_cursor back as cursor for more."
    )]
    async fn search_history(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = args.limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if limit == 0 || limit > MAX_SEARCH_LIMIT {
            return Ok(tool_error(format!(
                "`limit` must be 1 to {MAX_SEARCH_LIMIT}, not {limit}"
            )));
        }
        if super::search::terms(&args.query).next().is_none() {
            return Ok(tool_error("`query` has no words to look for".to_owned()));
        }
        let history = self.history().map_err(|e| internal(&e))?;
        let items = &history.conversation.items;
        let hits = search(items, &args.query);
        let start = args.cursor.unwrap_or(0);
        if start > hits.len() {
            return Ok(tool_error(format!(
                "`cursor` {start} is past the {} results",
                hits.len()
            )));
        }
        let mut results = Vec::new();
        let mut size = 0;
        let mut next = start;
        for hit in hits.iter().skip(start).take(limit) {
            let item = &items[hit.index];
            let result = json!({
                "id": item.meta.id.as_str(),
                "kind": item.kind().as_str(),
                "role": item.role().as_str(),
                "position": hit.index,
                "in_context": item.meta.visibility.model,
                "score": (hit.score * 1000.0).round() / 1000.0,
                "snippet": hit.snippet,
            });
            size += result.to_string().len();
            if size > MAX_RESULT_CHARS && !results.is_empty() {
                break;
            }
            results.push(result);
            next += 1;
        }
        Ok(text(&json!({
            "query": clip(&args.query, 200),
            "total": hits.len(),
            "results": results,
            "next_cursor": (next < hits.len()).then_some(next),
        })))
    }

    #[tool(
        description = "How full your context window is: tokens the model is shown now (counted by \
Compact, and as the agent's own log reported them at its last model call), the window, the point at \
which Compact would compact, items in the log and how many compaction removed."
    )]
    async fn context_status(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let history = self.history().map_err(|e| internal(&e))?;
        Ok(text(&status(&history)))
    }

    #[tool(
        description = "Compact's deterministic checkpoint of this whole session, including what \
compaction removed from your context: the task and latest requests, constraints, files modified and read, failed approaches with their error lines, \
decisions, and the latest task list, each citing item ids for recall. Within max_tokens."
    )]
    async fn checkpoint(
        &self,
        Parameters(args): Parameters<CheckpointArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let max_tokens = args.max_tokens.unwrap_or(DEFAULT_CHECKPOINT_TOKENS);
        if !(crate::checkpoint::MIN_HOOK_TOKENS..=MAX_CHECKPOINT_TOKENS).contains(&max_tokens) {
            return Ok(tool_error(format!(
                "`max_tokens` must be {} to {MAX_CHECKPOINT_TOKENS}, not {max_tokens}",
                crate::checkpoint::MIN_HOOK_TOKENS
            )));
        }
        let history = self.history().map_err(|e| internal(&e))?;
        let options = CheckpointOptions {
            max_tokens,
            counter: TokenCounter::new(Encoding::O200kBase),
        };
        // The whole log, the items compaction hid included, without the agent's own summaries:
        // the record Compact keeps of everything, not a summary of a summary.
        let items: Vec<Item> = history
            .conversation
            .items
            .iter()
            .filter(|i| !matches!(i.body(), ItemBody::Checkpoint(_)))
            .cloned()
            .collect();
        let checkpoint = build(&items, None, &options);
        Ok(text_page(
            &checkpoint.text,
            args.cursor,
            "call checkpoint again with the same max_tokens and cursor",
        ))
    }

    #[tool(
        description = "The facts Compact remembers about this session across compactions: \
constraints and preferences the user stated, decisions, files modified, dependencies and errors, \
each with its kind, how often it was seen and the ids of the items it came from (pass one to \
recall to read it whole). Trusted facts only, unless all is true."
    )]
    async fn memory(
        &self,
        Parameters(args): Parameters<MemoryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let history = self.history().map_err(|e| internal(&e))?;
        let memory = history.memory().map_err(|e| internal(&e))?;
        let all = args.all.unwrap_or(false);
        let mut text = String::new();
        for f in memory
            .facts()
            .iter()
            .filter(|f| all || f.lifecycle.trusted())
        {
            text.push_str(&format!(
                "- [{}] {} ({}, seen {}x, from {}): {}\n",
                f.id,
                f.kind.as_str(),
                f.lifecycle.as_str(),
                f.evidence,
                f.sources.join(", "),
                f.text
            ));
        }
        if text.is_empty() {
            text.push_str("No facts remembered for this session yet.\n");
        }
        Ok(text_page(
            &text,
            args.cursor,
            "call memory again with cursor",
        ))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CompactServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(INSTRUCTIONS);
        info.server_info = Implementation::new("compact", env!("CARGO_PKG_VERSION"));
        info
    }
}

/// The `context_status` figures of a session.
pub fn status(history: &History) -> Value {
    let registry = ModelRegistry::builtin();
    let model = history.model();
    let info = model.as_deref().and_then(|m| registry.lookup(m));
    let counter = info.map_or_else(|| TokenCounter::new(Encoding::O200kBase), |i| i.counter());
    let policy = Policy::default();
    let reported_window = history
        .reported
        .and_then(|r| r.window)
        .and_then(|w| usize::try_from(w).ok());
    let window = reported_window
        .or_else(|| info.map(|i| i.context_window as usize))
        .unwrap_or(policy.max_context_tokens);
    let budget = Budget::for_window(window, &policy);
    let view = Conversation {
        items: history.view.clone(),
        ..Conversation::default()
    };
    let used = counter.total(&view);
    let items = &history.conversation.items;
    let compactions = items
        .iter()
        .filter(|i| matches!(i.body(), ItemBody::Checkpoint(_)))
        .count();
    json!({
        "session": history.origin,
        "model": model,
        "tokens_in_context": used,
        "tokenizer": counter.encoding().name(),
        "window": window,
        "usable": budget.usable,
        "next_compaction_at": budget.trigger,
        "tokens_until_compaction": budget.trigger.saturating_sub(used),
        "items_in_log": items.len(),
        "items_in_context": history.view.len(),
        "items_removed_by_compaction": items.iter().filter(|i: &&Item| !i.meta.visibility.model).count(),
        "compactions": compactions,
        "agent_reported": history.reported.map(|r| json!({
            "input_tokens_at_last_call": r.input_tokens,
            "window": r.window,
        })),
    })
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Serves `source` over standard input and output until the client disconnects.
pub fn serve_stdio(source: Source) -> Result<(), AgentsError> {
    serve_stdio_with_runs(source, None)
}

/// Like [`serve_stdio`], `recall` also finding the outputs `compactctl run` kept in `runs`.
pub fn serve_stdio_with_runs(
    source: Source,
    runs: Option<Arc<dyn compact_session::Store>>,
) -> Result<(), AgentsError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AgentsError::io("<tokio runtime>", e))?;
    runtime.block_on(async {
        let mut server = CompactServer::new(source);
        if let Some(runs) = runs {
            server = server.with_runs(runs);
        }
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| AgentsError::io("<stdio>", std::io::Error::other(e.to_string())))?;
        service
            .waiting()
            .await
            .map_err(|e| AgentsError::io("<stdio>", std::io::Error::other(e.to_string())))?;
        Ok(())
    })
}
