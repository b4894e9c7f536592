//! Symbols defined in a piece of a file (functions, classes, types, test names, config keys, Markdown
//! headings), read cheaply line by line with keyword rules chosen by the file's extension. Used for the
//! artifact trail: what a file read or written contains, so the agent knows where things are.

/// Longest symbol kept, in characters (test names and headings can be sentences).
const MAX_SYMBOL_CHARS: usize = 48;
/// Lines longer than this are data, not declarations.
const MAX_LINE_CHARS: usize = 400;

/// The language family of a path, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Rust,
    Python,
    Script,
    Go,
    Jvm,
    C,
    Ruby,
    Shell,
    Markdown,
    Yaml,
    Toml,
    Other,
}

fn lang(path: &str) -> Lang {
    let ext = path
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "rs" => Lang::Rust,
        "py" | "pyi" => Lang::Python,
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" | "vue" | "svelte" => {
            Lang::Script
        }
        "go" => Lang::Go,
        "java" | "kt" | "kts" | "scala" | "cs" | "swift" | "dart" => Lang::Jvm,
        "c" | "h" | "cc" | "cpp" | "hpp" | "cxx" | "m" | "mm" => Lang::C,
        "rb" => Lang::Ruby,
        "sh" | "bash" | "zsh" => Lang::Shell,
        "md" | "markdown" | "mdx" => Lang::Markdown,
        "yml" | "yaml" => Lang::Yaml,
        "toml" | "ini" | "cfg" => Lang::Toml,
        _ => Lang::Other,
    }
}

/// Keywords after which a definition's name follows, per language. A trailing `(` marks functions
/// (written `name()`).
fn keywords(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Rust => &[
            "fn(",
            "struct",
            "enum",
            "trait",
            "type",
            "const",
            "static",
            "mod",
            "macro_rules!",
        ],
        Lang::Python => &["def(", "class"],
        Lang::Script => &[
            "function(",
            "class",
            "interface",
            "type",
            "enum",
            "const",
            "let",
        ],
        Lang::Go => &["func(", "type"],
        Lang::Jvm => &[
            "class",
            "interface",
            "enum",
            "record",
            "struct",
            "protocol",
            "fun(",
            "func(",
            "object",
        ],
        Lang::C => &["struct", "class", "enum", "union", "namespace"],
        Lang::Ruby => &["def(", "class", "module"],
        Lang::Shell => &["function("],
        Lang::Other => &[
            "fn(",
            "def(",
            "func(",
            "function(",
            "class",
            "struct",
            "interface",
            "enum",
        ],
        Lang::Markdown | Lang::Yaml | Lang::Toml => &[],
    }
}

/// Words that may come before the defining keyword.
const MODIFIERS: &[&str] = &[
    "pub",
    "pub(crate)",
    "pub(super)",
    "async",
    "unsafe",
    "extern",
    "export",
    "default",
    "declare",
    "abstract",
    "public",
    "private",
    "protected",
    "internal",
    "static",
    "final",
    "sealed",
    "open",
    "override",
    "data",
    "inline",
    "readonly",
];

/// Names in `text` that can only be code: `snake_case` (an inner underscore), `camelCase` or
/// `PascalCase` with an inner capital, or letters with digits (`v2Handler`), 4 to 48 characters. Most
/// used first (ties: first seen first), without duplicates, at most `max`. These are the fields,
/// calls and types an edit touched, which the agent is likely to name again.
pub fn code_names(text: &str, max: usize) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if !is_code_name(word) {
            continue;
        }
        match index.get(word) {
            Some(&i) => seen[i].1 += 1,
            None => {
                index.insert(word, seen.len());
                seen.push((word.to_owned(), 1));
            }
        }
    }
    // Stable: equal counts keep the order they were first seen in.
    seen.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    seen.into_iter().take(max).map(|(w, _)| w).collect()
}

/// File paths and file names `text` mentions (a search's matches, a listing, a build's error
/// locations): tokens with a `/` between name characters or ending in a short extension, without a
/// `:line:col` suffix, URLs or options. First seen first, without duplicates, at most `max`.
pub fn mentioned_paths(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let separators = |c: char| c.is_whitespace() || "\"'`()[]{}<>,;|=".contains(c);
    for raw in text.split(separators) {
        if out.len() >= max {
            break;
        }
        if raw.contains("://") || raw.starts_with('-') {
            continue;
        }
        // `src/lib.rs:12:5: error` -> `src/lib.rs`.
        let token = raw
            .split(':')
            .next()
            .unwrap_or("")
            .trim_end_matches(['.', '!', '?']);
        if (3..=160).contains(&token.len())
            && is_path_like(token)
            && !out.iter().any(|p| p == token)
        {
            out.push(token.to_owned());
        }
    }
    out
}

fn is_path_like(token: &str) -> bool {
    let name_char = |c: char| c.is_ascii_alphanumeric() || "_-./~@+".contains(c);
    if !token.chars().all(name_char) || !token.chars().any(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let file = token.rsplit('/').next().unwrap_or(token);
    let has_ext = file.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=6).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    let nested = token
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty() && *s != "." && *s != "..")
        .count()
        >= 2;
    has_ext || nested
}

fn is_code_name(word: &str) -> bool {
    let b = word.as_bytes();
    if !(4..=MAX_SYMBOL_CHARS).contains(&b.len()) || !(b[0].is_ascii_alphabetic() || b[0] == b'_') {
        return false;
    }
    let inner = &b[1..b.len() - 1];
    let letters = b.iter().filter(|c| c.is_ascii_alphabetic()).count();
    let snake = inner.contains(&b'_')
        && letters >= 3
        && !b
            .iter()
            .all(|c| c.is_ascii_uppercase() || *c == b'_' || c.is_ascii_digit());
    let camel = b[1..].iter().any(u8::is_ascii_uppercase) && b.iter().any(u8::is_ascii_lowercase);
    let digits =
        b.iter().any(u8::is_ascii_digit) && letters >= 3 && b.iter().any(u8::is_ascii_lowercase);
    snake || camel || digits
}

/// Symbols defined in `text` (a file's content or part of it; `cat -n` / Read line-number prefixes
/// are ignored), in order of appearance, without duplicates, at most `max`.
pub fn definitions(path: &str, text: &str, max: usize) -> Vec<String> {
    let lang = lang(path);
    let mut out: Vec<String> = Vec::new();
    let mut in_fence = false;
    for raw in text.lines() {
        if out.len() >= max {
            break;
        }
        if raw.len() > MAX_LINE_CHARS {
            continue;
        }
        let line = strip_line_number(raw);
        if lang == Lang::Markdown && line.trim_start().starts_with("```") {
            // A `# comment` in a fenced code block is not a heading.
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let symbol = match lang {
            Lang::Markdown => heading(line),
            Lang::Yaml => top_level_key(line, ':'),
            Lang::Toml => toml_section(line).or_else(|| top_level_key(line, '=')),
            Lang::Shell => shell_function(line).or_else(|| keyword_definition(lang, line)),
            Lang::Script => test_name(line).or_else(|| keyword_definition(lang, line)),
            Lang::Python | Lang::Rust if is_test_marker(line) => None,
            _ => keyword_definition(lang, line),
        };
        if let Some(s) = symbol {
            let s = super::shorten(&s, MAX_SYMBOL_CHARS);
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// `   12→code` (Claude Code's Read) or `    12\tcode` (`cat -n`) without the number.
fn strip_line_number(line: &str) -> &str {
    let t = line.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return line;
    }
    let rest = &t[digits..];
    rest.strip_prefix('→')
        .or_else(|| rest.strip_prefix('\t'))
        .unwrap_or(line)
}

fn is_test_marker(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("#[") || t.starts_with('@')
}

/// A definition introduced by one of the language's keywords, possibly after modifiers.
fn keyword_definition(lang: Lang, line: &str) -> Option<String> {
    let mut words = line.split_whitespace().peekable();
    while words.peek().is_some_and(|w| MODIFIERS.contains(w)) {
        words.next();
    }
    let word = words.next()?;
    let (keyword, function) = keywords(lang).iter().find_map(|k| {
        let (name, function) = match k.strip_suffix('(') {
            Some(n) => (n, true),
            None => (*k, false),
        };
        (word == name).then_some((name, function))
    })?;
    let mut rest = words.collect::<Vec<_>>().join(" ");
    if keyword == "func" && rest.starts_with('(') {
        // Go method: skip the receiver.
        rest = rest.split_once(')')?.1.trim_start().to_owned();
    }
    if keyword == "let" || keyword == "const" {
        // Script: only top-level bindings to functions or classes (`const f = (`, `= async`, `=>`).
        let top_level = !line.starts_with([' ', '\t']);
        let callable = rest.contains("=>") || rest.contains("= function") || rest.contains("= (");
        if lang == Lang::Script && !(top_level && callable) {
            return None;
        }
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '!'))
        .collect();
    if name.is_empty() || name.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(if function { format!("{name}()") } else { name })
}

/// `describe("...")`, `it("...")`, `test("...")`: the test's name.
fn test_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    let rest = ["describe(", "it(", "test("]
        .iter()
        .find_map(|p| t.strip_prefix(p))?;
    let quote = rest
        .chars()
        .next()
        .filter(|c| matches!(c, '"' | '\'' | '`'))?;
    let body = &rest[1..];
    let end = body.find(quote)?;
    Some(format!("test \"{}\"", &body[..end]))
}

/// `name() {` or `function name`: a shell function.
fn shell_function(line: &str) -> Option<String> {
    let t = line.trim();
    let (name, rest) = t.split_once("()")?;
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (valid && rest.trim_start().starts_with('{')).then(|| format!("{name}()"))
}

/// A Markdown heading of level 1 to 3.
fn heading(line: &str) -> Option<String> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if !(1..=3).contains(&hashes) {
        return None;
    }
    let title = line[hashes..].strip_prefix(' ')?.trim();
    (!title.is_empty()).then(|| format!("{} {title}", &line[..hashes]))
}

/// A key at column 0 followed by `sep` (`name:` in YAML, `name =` in TOML).
fn top_level_key(line: &str, sep: char) -> Option<String> {
    if line.starts_with([' ', '\t', '#', '-']) {
        return None;
    }
    let (key, _) = line.split_once(sep)?;
    let key = key.trim().trim_matches(['"', '\'']);
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    valid.then(|| key.to_owned())
}

/// `[section]` or `[[array]]` in TOML / INI.
fn toml_section(line: &str) -> Option<String> {
    let t = line.trim();
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    let inner = inner.trim_matches(['[', ']']);
    (!inner.is_empty() && !inner.contains(' ')).then(|| format!("[{inner}]"))
}

#[cfg(test)]
mod tests {
    use super::{code_names, definitions, mentioned_paths};

    #[test]
    fn mentioned_paths_are_files_and_nested_paths() {
        let text = "src/lib.rs:12:5: error[E0425]\n\
                    ./scripts/test passed; README.md changed\n\
                    see https://example.org/a/b.html, --out=dir/x and 3.14 or v1.2\n\
                    src/lib.rs again, `crates/core/Cargo.toml` (quoted)\n";
        assert_eq!(
            mentioned_paths(text, 10),
            [
                "src/lib.rs",
                "./scripts/test",
                "README.md",
                "dir/x",
                "crates/core/Cargo.toml"
            ]
        );
        assert_eq!(mentioned_paths(text, 2), ["src/lib.rs", "./scripts/test"]);
        assert!(mentioned_paths("just words and a number 1.5", 10).is_empty());
    }

    #[test]
    fn code_names_are_names_only_code_has() {
        let text = "let lane = LanePositionStart; self.base_commit = v2Handler(x);\n\
                    if returns the value then BaseCommit; base_commit again; MAX_LEN; a_b";
        let names = code_names(text, 10);
        assert_eq!(
            names,
            vec![
                "base_commit",
                "LanePositionStart",
                "v2Handler",
                "BaseCommit"
            ],
            "most used first; plain words, constants in capitals and short names are left out"
        );
        assert_eq!(code_names(text, 1), vec!["base_commit"]);
    }

    #[test]
    fn per_language_definitions() {
        let rust = "     1→use x;\n     2→pub(crate) async fn login(req: R) -> S {\n     3→pub struct Session {\n     4→#[test]\n     5→fn expired_is_401() {}\n     6→    let x = 1;";
        assert_eq!(
            definitions("src/login.rs", rust, 10),
            ["login()", "Session", "expired_is_401()"]
        );
        let py = "class Parser(Base):\n    def parse(self, s):\n        pass\nasync def main():\n";
        assert_eq!(definitions("p.py", py, 10), ["Parser", "parse()", "main()"]);
        let ts = "export interface Opts {}\nexport const run = async (x) => {\nconst n = 3;\ndescribe('engine', () => {\n  it(\"plans first\", () => {});\nexport default function App() {";
        assert_eq!(
            definitions("a.tsx", ts, 10),
            [
                "Opts",
                "run",
                "test \"engine\"",
                "test \"plans first\"",
                "App()"
            ]
        );
        let go = "func (s *Server) Start(ctx context.Context) error {\ntype Config struct {";
        assert_eq!(definitions("main.go", go, 10), ["Start()", "Config"]);
        assert_eq!(
            definitions(
                "README.md",
                "# Title\ntext\n## Usage\n```sh\n# a comment\n```\n#### deep",
                10
            ),
            ["# Title", "## Usage"]
        );
        assert_eq!(
            definitions("c.yaml", "policy:\n  trigger: 1\nmodel: x\n- item", 10),
            ["policy", "model"]
        );
        assert_eq!(
            definitions("Cargo.toml", "[package]\nname = \"x\"\n[[bin]]", 10),
            ["[package]", "name", "[bin]"]
        );
        assert_eq!(definitions("x.rs", "fn a() {}\nfn b() {}", 1), ["a()"]);
    }
}
