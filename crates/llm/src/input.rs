//! The summariser's input: items rendered as text blocks with tool outputs and arguments truncated and
//! media replaced by placeholders, packed into chunks that fit a token budget, and thinned middle-out
//! when a provider still reports an overflow.

use compact_core::model::{Checkpoint, Item, ItemBody, Part, PartKind};
use compact_core::tokens::TokenCounter;

/// Per-item truncation limits of the summariser input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// Longest tool output kept, in characters (head and tail around a marker).
    pub tool_output_chars: usize,
    /// Longest tool-call argument text kept, in characters.
    pub tool_args_chars: usize,
    /// Longest message or reasoning text kept, in characters.
    pub message_chars: usize,
}

/// Tool outputs beyond 2,000 characters rarely add facts a summary keeps (OpenCode and AGIME cap here).
pub const DEFAULT_TOOL_OUTPUT_CHARS: usize = 2_000;
/// Tool-call arguments beyond 1,200 characters are mostly file contents being written (AGIME's cap).
pub const DEFAULT_TOOL_ARGS_CHARS: usize = 1_200;
/// Messages are kept much longer: user requests and assistant conclusions are what summaries need.
pub const DEFAULT_MESSAGE_CHARS: usize = 20_000;

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            tool_output_chars: DEFAULT_TOOL_OUTPUT_CHARS,
            tool_args_chars: DEFAULT_TOOL_ARGS_CHARS,
            message_chars: DEFAULT_MESSAGE_CHARS,
        }
    }
}

/// What a block holds (tool results are the first thing removed when a call overflows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// A tool result.
    ToolResult,
    /// Anything else.
    Other,
}

/// One rendered item.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Kind.
    pub kind: BlockKind,
    /// Rendered text.
    pub text: String,
    /// Tokens of `text` (with the counter used to build it).
    pub tokens: usize,
}

/// Replacement text of a tool result removed to fit the summariser's window.
pub const REMOVED_TOOL_OUTPUT: &str = "[tool output removed to fit the summariser's window]";

/// Keeps the head and tail of `text` within `max_chars` characters around a `…N chars omitted…` marker.
pub fn truncate_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(total - tail).collect();
    format!("{start}\n…{} chars omitted…\n{end}", total - head - tail)
}

fn parts_text(parts: &[Part], max_chars: usize) -> String {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        match &p.kind {
            PartKind::Text(t) => out.push(t.clone()),
            PartKind::Image(_) => out.push("[image omitted]".into()),
            PartKind::File(m) => out.push(format!(
                "[file {} omitted]",
                m.name.as_deref().unwrap_or("(unnamed)")
            )),
            PartKind::Audio(_) => out.push("[audio omitted]".into()),
            PartKind::Opaque(_) => out.push("[unsupported content omitted]".into()),
        }
    }
    truncate_middle(&out.join("\n"), max_chars)
}

/// Renders one item (`None` for items with nothing to summarise).
pub fn render_item(item: &Item, limits: &InputLimits) -> Option<(BlockKind, String)> {
    let text = match item.body() {
        ItemBody::Message(m) => format!(
            "[{}] {}",
            m.role,
            parts_text(&m.parts, limits.message_chars)
        ),
        ItemBody::ToolCall(c) => format!(
            "[tool call {} id={}] {}",
            c.name,
            c.call_id,
            truncate_middle(&c.arguments.to_text(), limits.tool_args_chars)
        ),
        ItemBody::ToolResult(r) => {
            let status = if r.is_error { " ERROR" } else { "" };
            let name = r.tool_name.as_deref().unwrap_or("tool");
            let body = parts_text(&r.parts, limits.tool_output_chars);
            return Some((
                BlockKind::ToolResult,
                format!("[tool result {name} id={}{status}] {body}", r.call_id),
            ));
        }
        ItemBody::Reasoning(r) => {
            let mut texts: Vec<&str> = r.text.iter().map(String::as_str).collect();
            texts.extend(r.summary.iter().map(String::as_str));
            if texts.is_empty() {
                return None;
            }
            format!(
                "[assistant reasoning] {}",
                truncate_middle(&texts.join("\n"), limits.tool_args_chars)
            )
        }
        ItemBody::Checkpoint(c) => format!("[earlier record]\n{}", c.text),
        ItemBody::Opaque(o) => format!("[{} item omitted]", o.label),
        // Readable provider summaries feed the checkpoint; encrypted payloads never do.
        ItemBody::ProviderCompaction(p) => match p.summary() {
            Some(s) => format!("[the provider's summary of earlier work]\n{s}"),
            None => "[provider compaction omitted: encrypted]".to_owned(),
        },
    };
    Some((BlockKind::Other, text))
}

/// Renders the material: the previous checkpoint first (to be folded in), then the items.
pub fn render(
    items: &[Item],
    previous: Option<&Checkpoint>,
    limits: &InputLimits,
    counter: &TokenCounter,
) -> Vec<Block> {
    let mut out = Vec::with_capacity(items.len() + 1);
    if let Some(p) = previous {
        let text = format!(
            "[earlier record, to be folded into the new one]\n{}",
            p.text
        );
        out.push(Block {
            kind: BlockKind::Other,
            tokens: counter.count_text(&text),
            text,
        });
    }
    for item in items.iter().filter(|i| i.meta.visibility.model) {
        if let Some((kind, text)) = render_item(item, limits) {
            out.push(Block {
                kind,
                tokens: counter.count_text(&text),
                text,
            });
        }
    }
    out
}

/// Tokens charged per block on top of its text (the blank line separating blocks).
pub const BLOCK_SEPARATOR_TOKENS: usize = 1;

/// Total tokens of a set of blocks as joined by [`join`].
pub fn total_tokens(blocks: &[Block]) -> usize {
    blocks
        .iter()
        .map(|b| b.tokens + BLOCK_SEPARATOR_TOKENS)
        .sum()
}

/// Joins blocks into the material text.
pub fn join(blocks: &[Block]) -> String {
    let texts: Vec<&str> = blocks.iter().map(|b| b.text.as_str()).collect();
    texts.join("\n\n")
}

/// Cuts a block's text (middle-out, by characters) until it fits `budget` tokens.
pub fn shrink_block(block: &Block, budget: usize, counter: &TokenCounter) -> Block {
    let mut text = block.text.clone();
    let mut tokens = block.tokens;
    while tokens > budget && !text.is_empty() {
        let chars = text.chars().count();
        // Scale by the overshoot, with a little extra so the loop converges in a few steps.
        let target = (chars as u128 * budget as u128 / tokens.max(1) as u128) as usize * 9 / 10;
        text = truncate_middle(&text, target.min(chars.saturating_sub(1)));
        tokens = counter.count_text(&text);
    }
    Block {
        kind: block.kind,
        text,
        tokens,
    }
}

/// Packs blocks into consecutive chunks of at most `budget` tokens each; oversized blocks are shrunk.
pub fn chunk(blocks: &[Block], budget: usize, counter: &TokenCounter) -> Vec<Vec<Block>> {
    let per_block = budget.saturating_sub(BLOCK_SEPARATOR_TOKENS).max(1);
    let mut chunks: Vec<Vec<Block>> = Vec::new();
    let mut current: Vec<Block> = Vec::new();
    let mut used = 0usize;
    for b in blocks {
        let b = if b.tokens > per_block {
            shrink_block(b, per_block, counter)
        } else {
            b.clone()
        };
        let cost = b.tokens + BLOCK_SEPARATOR_TOKENS;
        if used + cost > budget && !current.is_empty() {
            chunks.push(std::mem::take(&mut current));
            used = 0;
        }
        used += cost;
        current.push(b);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// Replaces `percent`% of the tool results with a placeholder, starting from the middle of the list
/// and moving outwards (the oldest and newest outputs survive longest).
pub fn remove_tool_outputs_middle_out(
    blocks: &[Block],
    percent: u32,
    counter: &TokenCounter,
) -> Vec<Block> {
    let tool_idx: Vec<usize> = blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.kind == BlockKind::ToolResult)
        .map(|(i, _)| i)
        .collect();
    let n = tool_idx.len();
    let remove = (n * percent.min(100) as usize).div_ceil(100);
    if remove == 0 {
        return blocks.to_vec();
    }
    let mid = (n as f64 - 1.0) / 2.0;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| {
        let da = (*a as f64 - mid).abs();
        let db = (*b as f64 - mid).abs();
        da.total_cmp(&db).then(a.cmp(b))
    });
    let mut out = blocks.to_vec();
    let placeholder_tokens = counter.count_text(REMOVED_TOOL_OUTPUT);
    for &k in order.iter().take(remove) {
        let i = tool_idx[k];
        out[i] = Block {
            kind: BlockKind::ToolResult,
            text: REMOVED_TOOL_OUTPUT.to_owned(),
            tokens: placeholder_tokens,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use compact_core::tokens::Encoding;

    fn block(kind: BlockKind, text: &str) -> Block {
        Block {
            kind,
            text: text.into(),
            tokens: TokenCounter::new(Encoding::O200kBase).count_text(text),
        }
    }

    #[test]
    fn truncation_keeps_head_and_tail() {
        let s = "a".repeat(50) + &"b".repeat(50);
        let t = truncate_middle(&s, 10);
        assert!(t.starts_with("aaaaa\n…90 chars omitted…\nbbbbb"));
        assert_eq!(truncate_middle("short", 10), "short");
    }

    #[test]
    fn middle_out_order() {
        let c = TokenCounter::new(Encoding::O200kBase);
        let blocks: Vec<Block> = (0..5)
            .map(|i| block(BlockKind::ToolResult, &format!("out{i}")))
            .collect();
        let r = remove_tool_outputs_middle_out(&blocks, 20, &c);
        assert_eq!(r[2].text, REMOVED_TOOL_OUTPUT);
        assert_eq!(
            r.iter().filter(|b| b.text == REMOVED_TOOL_OUTPUT).count(),
            1
        );
        let r = remove_tool_outputs_middle_out(&blocks, 50, &c);
        let removed: Vec<usize> = (0..5)
            .filter(|i| r[*i].text == REMOVED_TOOL_OUTPUT)
            .collect();
        assert_eq!(removed, vec![1, 2, 3]);
        assert!(remove_tool_outputs_middle_out(&blocks, 100, &c)
            .iter()
            .all(|b| b.text == REMOVED_TOOL_OUTPUT));
        assert_eq!(remove_tool_outputs_middle_out(&blocks, 0, &c), blocks);
    }

    #[test]
    fn chunks_respect_budget() {
        let c = TokenCounter::new(Encoding::O200kBase);
        let blocks: Vec<Block> = (0..20)
            .map(|i| block(BlockKind::Other, &format!("word {i} ").repeat(30)))
            .collect();
        let big = block(BlockKind::Other, &"x y ".repeat(2_000));
        let mut all = blocks.clone();
        all.push(big);
        for ch in chunk(&all, 200, &c) {
            assert!(total_tokens(&ch) <= 200, "{}", total_tokens(&ch));
        }
    }
}
