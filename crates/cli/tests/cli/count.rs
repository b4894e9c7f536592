//! `compactctl count`: exact counts, standard input, `--model` resolution and bad flags.

use crate::support::{fixture, oracle, run, run_stdin};

/// Text mixing prose, code, JSON, shell output, CJK, emoji and a special-token string: the two
/// encodings disagree on it, so a count from the wrong vocabulary cannot pass.
const MIXED: &str = "Refactor `parse_amount()` so it doesn't panic on \"1,234.50\".\n\
fn main() { let v: Vec<u64> = (0..10).map(|x| x * x).collect(); println!(\"{v:?}\"); }\n\
{\"id\": 42, \"tags\": [\"alpha\", \"beta\"], \"ok\": true}\n\
$ cargo test -q\nerror[E0425]: cannot find value `totl` in this scope\n\
请把这个函数改成异步的，谢谢！ 🚀🔥 <|endoftext|> done.\n";

fn count(args: &[&str], input: &str) -> usize {
    let out = run_stdin(args, input.as_bytes()).ok();
    out.stdout
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("count printed {:?}: {e}", out.stdout))
}

#[test]
fn known_strings_have_their_published_counts() {
    // "hello world" is two tokens in both vocabularies (" world" is one token); ten digits split
    // into groups of at most three ("123" "456" "789" "0"); nothing is no tokens.
    for enc in ["o200k_base", "cl100k_base"] {
        assert_eq!(
            count(&["count", "--encoding", enc], "hello world"),
            2,
            "{enc}"
        );
        assert_eq!(
            count(&["count", "--encoding", enc], "1234567890"),
            4,
            "{enc}"
        );
        assert_eq!(count(&["count", "--encoding", enc], ""), 0, "{enc}");
    }
}

#[test]
fn exact_counts_match_an_independent_tokenizer() {
    let o200k = oracle("o200k_base", MIXED);
    let cl100k = oracle("cl100k_base", MIXED);
    assert_ne!(o200k, cl100k, "the text must tell the encodings apart");
    assert_eq!(count(&["count", "--encoding", "o200k_base"], MIXED), o200k);
    assert_eq!(
        count(&["count", "--encoding", "cl100k_base", "-"], MIXED),
        cl100k
    );
    // The default encoding is o200k_base.
    assert_eq!(count(&["count"], MIXED), o200k);
}

#[test]
fn counts_a_file_like_its_text() {
    let path = fixture("aider.chat.history.md");
    let text = std::fs::read_to_string(&path).unwrap();
    for enc in ["o200k_base", "cl100k_base"] {
        let out = run(&["count", "--encoding", enc, &path]).ok();
        assert_eq!(out.stdout.trim(), oracle(enc, &text).to_string(), "{enc}");
    }
}

#[test]
fn model_names_select_their_tokenizer() {
    let o200k = oracle("o200k_base", MIXED);
    let cl100k = oracle("cl100k_base", MIXED);
    for (model, want) in [
        ("gpt-4", cl100k),
        ("gpt-3.5-turbo", cl100k),
        ("gpt-4o", o200k),
        ("gpt-4.1", o200k),
    ] {
        assert_eq!(
            count(&["count", "--model", model], MIXED),
            want,
            "--model {model}"
        );
    }
}

#[test]
fn unknown_encoding_or_model_is_bad_input_naming_the_flag() {
    let out = run_stdin(&["count", "--encoding", "p50k_nonsense"], b"x").expect_code(2);
    assert!(out.stderr.contains("--encoding"), "{}", out.stderr);
    assert!(out.stderr.contains("p50k_nonsense"), "{}", out.stderr);
    let out = run_stdin(&["count", "--model", "no-such-model-9"], b"x").expect_code(2);
    assert!(out.stderr.contains("--model"), "{}", out.stderr);
    assert!(out.stderr.contains("no-such-model-9"), "{}", out.stderr);
    // The two flags exclude each other.
    run_stdin(
        &["count", "--model", "gpt-4", "--encoding", "o200k_base"],
        b"x",
    )
    .expect_code(2);
}

#[test]
fn missing_file_is_bad_input() {
    let out = run(&["count", "/nonexistent/compactctl/input.txt"]).expect_code(2);
    assert!(
        out.stderr.contains("/nonexistent/compactctl/input.txt"),
        "{}",
        out.stderr
    );
}
