//! Exact counting: our `o200k_base` / `cl100k_base` counts equal tiktoken-rs on varied text, token for
//! token where tokens are compared, and the cached fast path equals the plain BPE path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::tokens::{clear_piece_cache, Encoding};
use tiktoken_rs::CoreBPE;

/// Bytes of the shared corpus compared in the large-text check (enough to cover every format there
/// while keeping a debug-build test run short).
#[path = "fixtures/corpus.rs"]
mod corpus;

const CORPUS_BUDGET: usize = 1_500_000;

fn tiktoken(enc: Encoding) -> &'static CoreBPE {
    match enc {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        Encoding::Estimate => unreachable!("not an exact encoding"),
    }
}

fn fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokens/").to_owned() + name;
    std::fs::read_to_string(path).unwrap()
}

fn samples() -> Vec<String> {
    let mut out: Vec<String> = [
        "hello world",
        "",
        " ",
        "<|endoftext|>",
        "Text before <|endoftext|> and after <|im_start|>user<|im_end|> <|fim_prefix|><|endofprompt|>",
        "<|start|>assistant<|message|>hi<|end|><|return|><|call|>",
        "数据库迁移项目比原计划晚了三周才完成。移行プロジェクトは完了しました。데이터베이스 이전 작업",
        "emoji 😀😃🎉 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 skin 👍🏽 keycap 1️⃣",
        "café naïve résumé Ångström ſtraße Ǆ ǅ ǆ ﬁ x\u{301}y",
        "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}\n",
        "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\\n\\u00e9\"}}",
        "$ ls -la\ntotal 8\ndrwxr-xr-x 2 dev dev 4096 Mar 14 09:58 .\n",
        "I'm sure you'll see they've said it's what we'd done; DON'T SHOUT, I'LL LISTEN",
        "12345678901234567890 3.14159 1e-10 0x7fff_ffff ²³ ٣٤٥",
        "a\u{a0}b\u{3000}c\u{85}d\u{2028}e\u{b}f\u{c}g\r\nh\r\r\n",
        "trailing spaces    ",
        "\n\n\n\n",
        "   leading",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    // Long whitespace runs of every kind.
    out.push(" ".repeat(5_000));
    out.push(format!("x{}y", " ".repeat(1_000)));
    out.push("\t \n".repeat(700));
    out.push(format!("{}end", "\n".repeat(300)));
    // Long runs that stress BPE itself.
    out.push("a".repeat(3_000));
    out.push("ab12".repeat(800));
    out.push("=".repeat(2_000));
    out.push("中".repeat(1_000));
    for name in ["prose.txt", "code.txt", "json.txt", "shell.txt", "cjk.txt"] {
        out.push(fixture(name));
    }
    out
}

#[test]
fn counts_equal_tiktoken_on_samples() {
    for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
        for text in samples() {
            let want = tiktoken(enc).encode_ordinary(&text).len();
            assert_eq!(
                enc.count(&text),
                want,
                "{enc} cached on {:?}",
                &text[..text.len().min(80)]
            );
            assert_eq!(
                enc.count_uncached(&text),
                want,
                "{enc} uncached on {:?}",
                &text[..text.len().min(80)]
            );
        }
    }
}

#[test]
fn tokens_equal_tiktoken_token_for_token() {
    let pairs = [
        (Encoding::O200kBase, bpe_openai::o200k_base()),
        (Encoding::Cl100kBase, bpe_openai::cl100k_base()),
    ];
    for (enc, ours) in pairs {
        for text in samples() {
            assert_eq!(
                ours.encode(text.as_str()),
                tiktoken(enc).encode_ordinary(&text),
                "{enc}"
            );
        }
    }
}

#[test]
fn special_token_strings_are_ordinary_text() {
    for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let n = enc.count("<|endoftext|>");
        assert!(n > 1, "{enc}: <|endoftext|> counted as {n}");
        let special = tiktoken(enc)
            .encode_with_special_tokens("<|endoftext|>")
            .len();
        assert_eq!(
            special, 1,
            "tiktoken treats it as one special token when asked to"
        );
    }
}

#[test]
fn counts_equal_tiktoken_on_corpus() {
    let Some(dir) = corpus::dir() else {
        return;
    };
    let subdirs = std::fs::read_dir(dir).unwrap();
    let mut files: Vec<_> = subdirs
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut budget = CORPUS_BUDGET;
    // Take the head of every file (round robin) so that each format is covered.
    let per_file = CORPUS_BUDGET / files.len().max(1);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut end = per_file.min(text.len()).min(budget);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let text = &text[..end];
        budget -= end;
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            clear_piece_cache();
            let cold = enc.count(text);
            let warm = enc.count(text);
            let want = tiktoken(enc).encode_ordinary(text).len();
            assert_eq!(cold, want, "{enc} on {}", path.display());
            assert_eq!(warm, want, "{enc} (warm cache) on {}", path.display());
        }
    }
}

#[test]
fn counter_is_send_sync_and_counts_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<compact_core::tokens::TokenCounter>();
    let text = fixture("prose.txt") + &fixture("code.txt");
    let want = tiktoken(Encoding::O200kBase).encode_ordinary(&text).len();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let text = text.clone();
            std::thread::spawn(move || Encoding::O200kBase.count(&text))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), want);
    }
}
