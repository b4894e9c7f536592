//! Summary templates: the instructions given to the summariser model, in our own words. Every
//! template asks for a factual record of work already done (never new instructions), keeps exact
//! identifiers, and is extended by "also preserve" instructions or replaced by a custom prompt file.

use crate::error::LlmError;
use std::fmt;
use std::str::FromStr;

/// A built-in template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Template {
    /// Sections matching the deterministic checkpoint (the default).
    Checkpoint,
    /// Goals, entities, constraints, decisions, open actions.
    TaskState,
    /// A short bullet brief with key references (also the refusal retry).
    Brief,
    /// Chronological decision ledger.
    DecisionLog,
    /// Code changes per file.
    CodeDelta,
    /// Numbered ledger of steps taken and their outcomes.
    StepLedger,
    /// Every requirement the user stated and its status.
    RequirementsLedger,
    /// Sentences lifted verbatim from the conversation (seed 003).
    ExtractiveBrief,
    /// Handoff to another model resuming the task (seed 000).
    CheckpointHandoff,
    /// Agent-driven plan mode (seed 001): the model returns a JSON plan, see [`crate::plan`].
    Plan,
}

/// All templates, for help texts.
pub const ALL_TEMPLATES: &[Template] = &[
    Template::Checkpoint,
    Template::TaskState,
    Template::Brief,
    Template::DecisionLog,
    Template::CodeDelta,
    Template::StepLedger,
    Template::RequirementsLedger,
    Template::ExtractiveBrief,
    Template::CheckpointHandoff,
    Template::Plan,
];

impl Template {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Template::Checkpoint => "checkpoint",
            Template::TaskState => "task_state",
            Template::Brief => "brief",
            Template::DecisionLog => "decision_log",
            Template::CodeDelta => "code_delta",
            Template::StepLedger => "step_ledger",
            Template::RequirementsLedger => "requirements_ledger",
            Template::ExtractiveBrief => "extractive_brief",
            Template::CheckpointHandoff => "checkpoint_handoff",
            Template::Plan => "plan",
        }
    }

    /// What the record must contain (the template-specific part of the instructions).
    pub fn body(self) -> &'static str {
        match self {
            Template::Checkpoint => CHECKPOINT,
            Template::TaskState => TASK_STATE,
            Template::Brief => BRIEF,
            Template::DecisionLog => DECISION_LOG,
            Template::CodeDelta => CODE_DELTA,
            Template::StepLedger => STEP_LEDGER,
            Template::RequirementsLedger => REQUIREMENTS_LEDGER,
            Template::ExtractiveBrief => EXTRACTIVE_BRIEF,
            Template::CheckpointHandoff => CHECKPOINT_HANDOFF,
            Template::Plan => CHECKPOINT,
        }
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Template {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        ALL_TEMPLATES
            .iter()
            .copied()
            .find(|t| t.name() == norm)
            .ok_or_else(|| {
                let names: Vec<&str> = ALL_TEMPLATES.iter().map(|t| t.name()).collect();
                LlmError::Config(format!(
                    "unknown template `{s}` (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// The framing shared by every template: who reads the record and how it must read.
pub const PREAMBLE: &str = "You maintain the working memory of a software agent. The earlier part of its \
conversation is about to be removed from its context and replaced by the record you write now. Another \
model will continue the work from that record alone.\n\
Rules:\n\
- Write a record of work that already happened, in the past tense. It is reference material, not a new \
request: never phrase it as instructions or as a message from the user.\n\
- Use only what the conversation shows. Do not guess, do not fill gaps, do not add advice.\n\
- Copy exact identifiers: file paths, commands, function and variable names, URLs, error messages, \
versions, numbers.\n\
- Keep failed attempts and why they failed, so they are not repeated.\n\
- Tool outputs in the material may be shortened (marked with …); do not reconstruct the missing parts.\n";

const CHECKPOINT: &str = "Write the record with exactly these sections, in this order, each as short bullets \
(write \"none\" when a section is empty):\n\
## Goal and user requests\nThe overall goal, then each request the user made, with its status (done, in progress, not started, abandoned).\n\
## Constraints and preferences\nRules, limits and preferences the user stated or the environment imposed.\n\
## Files\nFiles read and files modified (path, and for modified files what changed).\n\
## Commands\nCommands run, each with its exit status or outcome.\n\
## Errors and failed approaches\nErrors met and approaches that did not work, with the reason.\n\
## Decisions\nDecisions taken and their rationale.\n\
## Current state and next steps\nWhere the work stood at the end of the material, and the next steps that were planned.\n";

const TASK_STATE: &str = "Record only:\n\
- the goals and how success is judged;\n\
- key entities: identifiers, file names, branches, environments, services;\n\
- constraints (security, compatibility, budgets, deadlines, style);\n\
- decisions taken and their rationale;\n\
- open actions and blockers;\n\
- sources consulted (names or URLs only).\n\
Be tight and factual.\n";

const BRIEF: &str = "Write a short brief: at most ten bullets covering the goal, what was done, what failed, and \
what remained open, followed by a \"References\" line listing the file paths, commands and URLs that matter.\n";

const DECISION_LOG: &str = "Write a chronological ledger of decisions, one line each:\n\
[step] decision :: rationale :: inputs (brief) :: outcome (brief)\n\
Neutral tone, no repetition, include decisions that were later reversed (mark them reversed).\n";

const CODE_DELTA: &str = "Describe the code changes as a diff-like list, one entry per file:\n\
- path: what changed (functions, types, APIs touched, behaviour and side effects), why, and any follow-up left.\n\
Then list files that were only read, and tests or builds run with their results.\n";

const STEP_LEDGER: &str = "Write a numbered ledger of the steps taken, oldest first, one line each:\n\
N. action (tool or command, with its target) -> outcome (success, failure with the error, or partial)\n\
End with the step that was in progress, if any.\n";

const REQUIREMENTS_LEDGER: &str = "List every requirement, request, acceptance criterion and constraint the user \
stated, one line each, in the user's own words where short:\n\
- requirement -> status (met, partly met, not met, dropped by the user) and evidence (file, test, command)\n\
Then list requirements that were inferred rather than stated, marked as inferred.\n";

const EXTRACTIVE_BRIEF: &str = "Build the record from sentences and lines copied verbatim from the material (no \
paraphrase): the user's requests, stated constraints, decisions, error messages and final results. Put each \
extract on its own line prefixed by its source in brackets ([user], [assistant], [tool NAME]). Keep them in \
order and drop everything else.\n";

const CHECKPOINT_HANDOFF: &str = "Write a handoff record for the model that resumes this task:\n\
- progress so far and the key decisions taken;\n\
- context that matters: constraints, user preferences, environment facts;\n\
- what remained to be done, as the next steps that were planned;\n\
- data needed to continue (paths, identifiers, commands, values).\n\
Be concise; the goal is to let the next model continue without redoing or repeating work.\n";

/// Where the instructions come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// A built-in template.
    Builtin(Template),
    /// A custom prompt (contents of a prompt file) replacing the template.
    Custom(String),
}

/// The full system prompt: preamble, template (or custom prompt), "also preserve" additions, and
/// the length limit.
pub fn system_prompt(
    source: &PromptSource,
    also_preserve: Option<&str>,
    max_tokens: usize,
) -> String {
    let mut out = String::from(PREAMBLE);
    out.push('\n');
    match source {
        PromptSource::Builtin(t) => out.push_str(t.body()),
        PromptSource::Custom(text) => {
            out.push_str(text.trim_end());
            out.push('\n');
        }
    }
    if let Some(extra) = also_preserve.map(str::trim).filter(|s| !s.is_empty()) {
        out.push_str("\nAlso preserve, in addition to the above:\n");
        out.push_str(extra);
        out.push('\n');
    }
    out.push_str(&format!(
        "\nKeep the record under {max_tokens} tokens. Output only the record.\n"
    ));
    out
}

/// Instructions for the map step of chunked summarisation (a part of the material).
pub fn partial_note(index: usize, total: usize) -> String {
    format!(
        "The material is part {index} of {total} of the earlier work, in order. Record this part only, using \
the same structure; later parts will be merged with it.\n"
    )
}

/// Instructions for the reduce step (merging partial records).
pub const MERGE_NOTE: &str = "The material consists of records of consecutive parts of the earlier work, oldest \
first. Merge them into one record with the structure above: later facts supersede earlier ones, keep every \
failed approach, file path and open item, and drop repetition.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in ALL_TEMPLATES {
            assert_eq!(t.name().parse::<Template>().ok(), Some(*t));
        }
        assert!("nope".parse::<Template>().is_err());
        assert_eq!(
            "step-ledger".parse::<Template>().ok(),
            Some(Template::StepLedger)
        );
    }

    #[test]
    fn prompt_has_additions_and_limit() {
        let p = system_prompt(
            &PromptSource::Builtin(Template::Brief),
            Some("the API keys' names"),
            500,
        );
        assert!(p.contains("the API keys' names"));
        assert!(p.contains("under 500 tokens"));
        let custom = system_prompt(&PromptSource::Custom("MY PROMPT".into()), None, 10);
        assert!(custom.contains("MY PROMPT") && !custom.contains("## Goal"));
    }
}
