//! `compactctl inspect`: what a conversation or transcript holds, what it costs, and whether the
//! provider would accept it as it would be sent.

use crate::load::{load, LoadArgs};
use crate::output::outln;
use crate::resolve::{self, ModelChoice};
use clap::Args;
use compact_core::model::{Conversation, Format, ItemKind};
use compact_core::tokens::{ConversationCount, TokenCounter};
use compact_formats::validate::{validate, Violation};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// How many of the largest items `inspect` lists.
const LARGEST_ITEMS: usize = 10;
/// Characters of an item's text shown in the largest-items list.
const PREVIEW_CHARS: usize = 60;
/// How many provider-rule violations `inspect` lists (all are counted).
const VIOLATIONS_SHOWN: usize = 10;

/// Arguments of `compactctl inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    model: ModelChoice,
    /// Print one JSON object instead of the human report.
    #[arg(long)]
    json: bool,
}

/// Runs `inspect`.
pub fn run(args: &InspectArgs) -> anyhow::Result<ExitCode> {
    let counter = resolve::counter(&args.model)?;
    let loaded = load(&args.load)?;
    let imported = &loaded.imported;
    let summary = Summary::of(&imported.conversation, &counter, imported.stats.errors);
    let mut report = summary.to_json(imported.format.name(), &imported.warnings.len());
    report["source"] = json!({
        "records_read": imported.stats.records_read,
        "records_skipped": imported.stats.records_skipped,
        "records_malformed": imported.stats.records_malformed,
        "skipped_kinds": imported.stats.skipped_kinds,
        "sessions": imported.stats.sessions,
        "compactions": imported.stats.compactions,
        "off_branch_items": imported.stats.off_branch_items,
        "subagent": imported.stats.subagent,
    });
    let checked = Validation::of(&imported.conversation, imported.format.wire_target())?;
    report["validation"] = checked.to_json();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&loaded.name, &report, &summary)?;
        let st = &imported.stats;
        outln!(
            "  source       {} records read, {} skipped, {} malformed, {} sessions, {} compactions",
            st.records_read,
            st.records_skipped,
            st.records_malformed,
            st.sessions,
            st.compactions
        );
        if st.subagent {
            outln!("  note         a subagent's own transcript (every record is a sidechain)");
        }
        checked.print_human()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What the provider-rules validator finds in the request the input would be sent as (the imported
/// conversation encoded to its wire target, unchanged).
struct Validation {
    format: Format,
    violations: Vec<Violation>,
}

impl Validation {
    fn of(conv: &Conversation, format: Format) -> anyhow::Result<Validation> {
        let encoded = compact_formats::wire::encode(conv, format)
            .map_err(|e| anyhow::anyhow!("encoding the conversation as {format}: {e}"))?;
        Ok(Validation {
            format,
            violations: validate(&encoded.value, format),
        })
    }

    fn to_json(&self) -> Value {
        let first: Vec<Value> = self
            .violations
            .iter()
            .take(VIOLATIONS_SHOWN)
            .map(|v| json!({"path": v.path, "rule": v.rule.as_str(), "message": v.message}))
            .collect();
        json!({
            "format": self.format.name(),
            "violations": self.violations.len(),
            "first": first,
        })
    }

    fn print_human(&self) -> std::io::Result<()> {
        if self.violations.is_empty() {
            outln!(
                "  validation   as sent ({}): no provider-rule violations",
                self.format
            );
            return Ok(());
        }
        let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
        for v in &self.violations {
            *by_rule.entry(v.rule.as_str()).or_insert(0) += 1;
        }
        let rules: Vec<String> = by_rule.iter().map(|(r, n)| format!("{r} {n}")).collect();
        outln!(
            "  validation   as sent ({}): {} provider-rule violations ({})",
            self.format,
            self.violations.len(),
            rules.join(", ")
        );
        for v in self.violations.iter().take(VIOLATIONS_SHOWN) {
            outln!("    {v}");
        }
        Ok(())
    }
}

/// Everything `inspect` reports, computed once.
struct Summary {
    items: usize,
    hidden: usize,
    by_kind: BTreeMap<&'static str, usize>,
    by_role: BTreeMap<&'static str, usize>,
    tool_calls: usize,
    tool_results: usize,
    orphan_calls: usize,
    orphan_results: usize,
    errors: usize,
    count: ConversationCount,
    largest: Vec<(usize, u32)>,
    previews: Vec<Value>,
}

impl Summary {
    fn of(conv: &Conversation, counter: &TokenCounter, errors: usize) -> Summary {
        let count = counter.count_conversation(conv);
        let pairing = conv.pairing();
        let mut by_kind = BTreeMap::new();
        let mut by_role = BTreeMap::new();
        for item in &conv.items {
            *by_kind.entry(item.kind().as_str()).or_insert(0) += 1;
            *by_role.entry(item.role().as_str()).or_insert(0) += 1;
        }
        let mut largest: Vec<(usize, u32)> = count.per_item.iter().copied().enumerate().collect();
        largest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        largest.truncate(LARGEST_ITEMS);
        let previews = largest
            .iter()
            .map(|&(idx, tokens)| {
                let item = &conv.items[idx];
                let text: String = item.plain_text().chars().take(PREVIEW_CHARS).collect();
                json!({
                    "index": idx,
                    "id": item.meta.id.as_str(),
                    "kind": item.kind().as_str(),
                    "tokens": tokens,
                    // Control characters (line breaks, NUL, terminal escapes) print as spaces.
                    "preview": text.replace(char::is_control, " "),
                })
            })
            .collect();
        Summary {
            items: conv.items.len(),
            hidden: conv
                .items
                .iter()
                .filter(|i| !i.meta.visibility.model)
                .count(),
            by_kind,
            by_role,
            tool_calls: conv
                .items
                .iter()
                .filter(|i| i.kind() == ItemKind::ToolCall)
                .count(),
            tool_results: conv
                .items
                .iter()
                .filter(|i| i.kind() == ItemKind::ToolResult)
                .count(),
            orphan_calls: pairing.orphan_calls.len(),
            orphan_results: pairing.orphan_results.len(),
            errors,
            count,
            largest,
            previews,
        }
    }

    fn to_json(&self, format: &str, warnings: &usize) -> Value {
        let by_role: BTreeMap<&str, usize> = self
            .count
            .by_role
            .iter()
            .map(|(r, n)| (r.as_str(), *n))
            .collect();
        let by_kind: BTreeMap<&str, usize> = self
            .count
            .by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        json!({
            "format": format,
            "items": self.items,
            "hidden_items": self.hidden,
            "items_by_kind": self.by_kind,
            "items_by_role": self.by_role,
            "tool_calls": self.tool_calls,
            "tool_results": self.tool_results,
            "orphans": self.orphan_calls + self.orphan_results,
            "orphan_calls": self.orphan_calls,
            "orphan_results": self.orphan_results,
            "errors": self.errors,
            "warnings": warnings,
            "tokens": {
                "total": self.count.total,
                "tools": self.count.tools,
                "by_role": by_role,
                "by_kind": by_kind,
                "by_tool": self.count.by_tool,
            },
            "largest_items": self.previews,
        })
    }
}

fn print_human(name: &str, report: &Value, summary: &Summary) -> std::io::Result<()> {
    outln!(
        "{name}: {} conversation",
        report["format"].as_str().unwrap_or("?")
    );
    outln!(
        "  items        {} ({} hidden from the model)",
        summary.items,
        summary.hidden
    );
    let kinds: Vec<String> = summary
        .by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    outln!("  by kind      {}", kinds.join(", "));
    let roles: Vec<String> = summary
        .by_role
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    outln!("  by role      {}", roles.join(", "));
    outln!(
        "  tool calls   {} calls, {} results, {} orphan calls, {} orphan results, {} errors",
        summary.tool_calls,
        summary.tool_results,
        summary.orphan_calls,
        summary.orphan_results,
        summary.errors
    );
    outln!(
        "  tokens       {} total ({} in tool declarations)",
        summary.count.total,
        summary.count.tools
    );
    for (role, n) in &summary.count.by_role {
        outln!("    {:<11}{n}", role.as_str());
    }
    if !summary.count.by_tool.is_empty() {
        outln!("  tokens by tool");
        let mut tools: Vec<(&String, &usize)> = summary.count.by_tool.iter().collect();
        tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (tool, n) in tools {
            outln!("    {tool:<24}{n}");
        }
    }
    outln!("  largest items");
    for (preview, (idx, tokens)) in summary.previews.iter().zip(&summary.largest) {
        outln!(
            "    #{idx:<5} {:<12} {tokens:>7}  {}",
            preview["kind"].as_str().unwrap_or(""),
            preview["preview"].as_str().unwrap_or("")
        );
    }
    Ok(())
}
