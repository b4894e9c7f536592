//! `compactctl replay`: a batch goes on past a file it cannot read, reports it (table, Markdown,
//! `skipped` in JSON) and fails only when no file can be read.

use crate::support::{fixture, run, run_env, simulator};

const WINDOW: &str = "16000";

#[test]
fn unreadable_file_is_reported_and_the_rest_replayed() {
    let good = fixture("atif.trajectory.json");
    let broken = fixture("claude-code-truncated.jsonl");
    let out = run(&["replay", &good, &broken, "--window", WINDOW, "--json"]).ok();
    let report = out.json();
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{report}");
    assert_eq!(sessions[0]["name"], "atif.trajectory.json");
    assert_eq!(sessions[0]["format"], "atif");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report}");
    assert_eq!(skipped[0]["file"], broken.as_str());
    let reason = skipped[0]["reason"].as_str().unwrap();
    // The reason is the import error: file, line, column and what is wrong.
    assert!(reason.contains("claude-code-truncated.jsonl:"), "{reason}");
    assert!(reason.contains("truncated JSON"), "{reason}");
    assert!(out.stderr.contains("skipping"), "{}", out.stderr);

    // The table and Markdown name the file and the reason too.
    let table = run(&["replay", &good, &broken, "--window", WINDOW]).ok();
    assert!(table.stdout.starts_with("1 session(s)"), "{}", table.stdout);
    assert!(
        table.stdout.contains("1 file(s) skipped") && table.stdout.contains(reason),
        "{}",
        table.stdout
    );
    let md = run(&["replay", &good, &broken, "--window", WINDOW, "--markdown"]).ok();
    assert!(md.stdout.contains("1 file(s) skipped"), "{}", md.stdout);
    assert!(md.stdout.contains(reason), "{}", md.stdout);

    // A clean batch has an empty `skipped` list.
    let clean = run(&["replay", &good, "--window", WINDOW, "--json"]).ok();
    assert_eq!(clean.json()["skipped"], serde_json::json!([]));
}

#[test]
fn no_readable_file_is_bad_input() {
    let broken = fixture("claude-code-truncated.jsonl");
    let missing = "/nonexistent/compactctl/replay.jsonl";
    let out = run(&["replay", &broken, missing, "--window", WINDOW, "--json"]).expect_code(2);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains("no transcript could be read"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("claude-code-truncated.jsonl:"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(missing), "{}", out.stderr);
}

/// The two-strike breaker in a replay through the session runtime (`--store`): a pinned system
/// prompt between the trigger and the usable budget keeps every request above the trigger, so the
/// first two compactions of the user's turn cannot get under it; the breaker then sends requests
/// uncompacted while they fit, and compacts them anyway once they do not (none is refused).
#[test]
fn replay_through_the_runtime_holds_back_after_two_strikes_and_compacts_when_over() {
    use compact_core::budget::Budget;
    use compact_core::model::{Item, Role};
    use compact_core::policy::Policy;
    use compact_core::tokens::{Encoding, TokenCounter};
    use serde_json::json;

    let window = 8_000;
    let budget = Budget::new(&Policy::for_window(window));
    let counter = TokenCounter::new(Encoding::O200kBase);
    let aim = budget.trigger + (budget.usable - budget.trigger) / 3;
    let mut system = String::new();
    let mut n = 0;
    while counter.count_item(&Item::text(Role::System, &system)) < aim {
        n += 1;
        system.push_str(&format!(
            "Rule {n}: keep the build green and the logs tidy. "
        ));
    }
    let mut messages = vec![
        json!({"role": "system", "content": system}),
        json!({"role": "user", "content": "Tidy the logs, one directory at a time."}),
    ];
    for i in 0..40 {
        let id = format!("call_{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "bash",
             "arguments": json!({"command": format!("ls logs/{i}")}).to_string()}}]}));
        messages
            .push(json!({"role": "tool", "tool_call_id": id, "content": format!("app-{i}.log")}));
    }
    messages.push(json!({"role": "assistant", "content": "All tidy."}));
    let dir = crate::support::temp_dir("strikes");
    let transcript = crate::support::in_dir(&dir, "strikes.json");
    std::fs::write(
        &transcript,
        json!({"model": "gpt-5", "messages": messages}).to_string(),
    )
    .unwrap();
    let db = crate::support::in_dir(&dir, "sessions.db");
    let out = run(&[
        "replay",
        &transcript,
        "--window",
        &window.to_string(),
        "--model",
        "gpt-5",
        "--store",
        &format!("sqlite:{db}"),
    ])
    .ok();
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("stored session `strikes.json`"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    let number_before = |what: &str| -> usize {
        let at = line
            .find(what)
            .unwrap_or_else(|| panic!("{what} in {line}"));
        line[..at]
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    // The two strikes, then calls held back while they fit, then compactions of requests that no
    // longer fit; nothing refused.
    assert!(
        number_before(" sent uncompacted by the two-strike breaker") >= 1,
        "{line}"
    );
    assert!(number_before(" attempted)") >= 3, "{line}");
    assert_eq!(number_before(" refused"), 0, "{line}");
}

/// `--summarizer anthropic-compaction` against the simulator: every checkpoint is the provider's
/// own compaction, made for real over HTTP, and its usage (the compaction pass's iterations) is
/// priced into the strategy's cost; the deterministic checkpoint calls nothing and costs nothing
/// more.
#[test]
fn replay_prices_the_summariser_calls_of_a_provider_backend() {
    const SUMMARY_TOKENS: u64 = 400;
    let (_rt, sim) = simulator(compact_sim::SimConfig {
        compaction_summary_tokens: Some(SUMMARY_TOKENS),
        ..compact_sim::SimConfig::with_window(1_000_000)
    });
    let transcript = fixture("claude-code-long.jsonl");
    let args = [
        "replay",
        &transcript,
        "--window",
        "8000",
        "--compare",
        "codex",
        "--json",
    ];
    let own = run(&args).ok().json();
    let base = sim.base_url();
    let mut with_provider = args.to_vec();
    with_provider.extend(["--summarizer", "anthropic-compaction", "--base-url", &base]);
    let provider = run_env(
        &with_provider,
        &[("ANTHROPIC_API_KEY", "sk-ant-test-replay-0123456789")],
    )
    .ok();
    let provider = provider.json();
    let codex = |report: &serde_json::Value| {
        report["strategies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["strategy"] == "codex")
            .cloned()
            .unwrap()
    };
    let (own, provider) = (codex(&own), codex(&provider));
    assert_eq!(own["summarizer"]["calls"], 0, "{own}");
    assert_eq!(own["summarizer"]["cost"], 0.0, "{own}");

    let calls = provider["summarizer"]["calls"].as_u64().unwrap();
    assert!(calls > 0, "{provider}");
    assert!(
        calls >= provider["compactions"].as_u64().unwrap() / 2,
        "most compactions summarise: {provider}"
    );
    // The simulator counted what each call sent and wrote summaries of about SUMMARY_TOKENS.
    let asked: Vec<_> = sim
        .requests()
        .into_iter()
        .filter(|r| r.body.get("compaction").is_some())
        .collect();
    assert_eq!(asked.len() as u64, calls, "{provider}");
    let output = provider["summarizer"]["output_tokens"].as_u64().unwrap();
    assert!(
        output >= calls * (SUMMARY_TOKENS - 10) && output <= calls * (SUMMARY_TOKENS + 10),
        "{output} output tokens over {calls} calls"
    );
    let input = provider["summarizer"]["input_tokens"].as_u64().unwrap();
    assert_eq!(
        input,
        asked.iter().map(|r| r.input_tokens.unwrap()).sum::<u64>(),
        "the replay prices what the provider counted"
    );
    // gpt-5 prices: the calls' input at $1.25 and output at $10 per million tokens, in the cost.
    let expected = (input as f64 * 1.25 + output as f64 * 10.0) / 1e6;
    let priced = provider["summarizer"]["cost"].as_f64().unwrap();
    assert!((priced - expected).abs() < 1e-9, "{priced} vs {expected}");
    assert!(provider["cost"].as_f64().unwrap() > priced);
}

/// Issue 45: `--split A|B` replays the two halves of a corpus split by project, each project in one
/// half only; `--list-split` names each file's project (from the corpus's MANIFEST.md, else the file
/// name's prefix), family and half.
#[test]
fn split_halves_partition_the_files_by_project() {
    let dir = std::env::temp_dir().join(format!("compactctl-split-{}", std::process::id()));
    let cc = dir.join("claude-code");
    let cx = dir.join("codex-rollout");
    std::fs::create_dir_all(&cc).unwrap();
    std::fs::create_dir_all(&cx).unwrap();
    let mut files = Vec::new();
    for (sub, name, fixture_name) in [
        (&cc, "acme__app__one.jsonl", "claude-code.jsonl"),
        (&cc, "acme__app__two.jsonl", "claude-code-long.jsonl"),
        (&cc, "zeta__tool__one.jsonl", "claude-code-long.jsonl"),
        (&cx, "acme__rollout-1.jsonl", "codex-rollout.jsonl"),
        (&cx, "other__rollout-2.jsonl", "codex-rollout-long.jsonl"),
    ] {
        let path = sub.join(name);
        std::fs::copy(fixture(fixture_name), &path).unwrap();
        files.push(path.to_string_lossy().into_owned());
    }
    std::fs::write(
        dir.join("MANIFEST.md"),
        "| file | source repository |\n|---|---|\n\
         | `claude-code/acme__app__one.jsonl` | acme/app |\n\
         | `claude-code/acme__app__two.jsonl` | acme/app |\n\
         | `claude-code/zeta__tool__one.jsonl` | zeta/tool |\n\
         | `codex-rollout/acme__rollout-1.jsonl` | acme/cli |\n",
    )
    .unwrap();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["replay", "--window", WINDOW, "--lenient"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a.extend(files.iter().cloned());
        a
    };
    let listed = run(&args(&["--list-split"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>())
    .ok();
    let rows: Vec<Vec<&str>> = listed
        .stdout
        .lines()
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(rows.len(), 5, "{}", listed.stdout);
    let half_of = |file: &str| -> (&str, &str, &str) {
        let row = rows.iter().find(|r| r[0].ends_with(file)).unwrap();
        (row[1], row[2], row[3])
    };
    let (p1, f1, h1) = half_of("acme__app__one.jsonl");
    let (p2, _, h2) = half_of("acme__app__two.jsonl");
    assert_eq!((p1, f1), ("acme/app", "claude-code"));
    assert_eq!((p2, h2), ("acme/app", h1), "one project, one half");
    assert_eq!(half_of("acme__rollout-1.jsonl").0, "acme/cli");
    // Not in the manifest: the file name's prefix.
    assert_eq!(half_of("other__rollout-2.jsonl").0, "other");
    // Each family has a session in each half (two projects each, balanced by size).
    for family in ["claude-code", "codex-rollout"] {
        let halves: std::collections::BTreeSet<&str> = rows
            .iter()
            .filter(|r| r[2] == family)
            .map(|r| r[3])
            .collect();
        assert_eq!(halves.len(), 2, "{family}: {}", listed.stdout);
    }
    // --split A and --split B replay the listed halves, together every file once.
    let mut seen = Vec::new();
    for half in ["A", "B"] {
        let out = run(&args(&["--split", half, "--json", "--compare", "tiered"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>())
        .ok();
        for s in out.json()["sessions"].as_array().unwrap() {
            let name = s["name"].as_str().unwrap().to_owned();
            assert_eq!(half_of(&name).2, half, "{name}");
            seen.push(name);
        }
    }
    seen.sort();
    assert_eq!(seen.len(), 5, "{seen:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
