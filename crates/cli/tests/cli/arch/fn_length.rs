//! How long each function of a Rust source file is, read by matching braces in its code alone:
//! comments and the contents of string, raw string, byte and char literals are blanked out first,
//! so a `'{'` or a `"}"` does not open or close anything. Test code (a `#[cfg(test)]` item, a
//! `#[test]` function, a file declared as `#[cfg(test)] mod NAME;`) is left out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most lines a function may take, from its `fn` line to its closing brace: a reader holds
/// well under this on one screen or two; past it a body is a sequence of steps that want names.
pub const LIMIT: usize = 150;

/// One function with a body, outside test code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its name (`r#` prefix kept).
    pub name: String,
    /// The 1-based line of its `fn` keyword.
    pub line: usize,
    /// Lines from the `fn` line to the closing brace's, both included.
    pub lines: usize,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index just past the end of the line comment, block comment, literal or identifier that
/// starts at `i`, and whether it is something to blank (a comment or a literal); `None` when
/// `i` starts none of them (one character of code).
fn token_end(src: &[char], i: usize) -> Option<(usize, bool)> {
    let at = |k: usize| src.get(k).copied();
    match src[i] {
        '/' if at(i + 1) == Some('/') => {
            let end = (i..src.len())
                .find(|&k| src[k] == '\n')
                .unwrap_or(src.len());
            Some((end, true))
        }
        '/' if at(i + 1) == Some('*') => Some((block_comment_end(src, i), true)),
        '"' => Some((string_end(src, i + 1), true)),
        '\'' => char_literal_end(src, i).map(|end| (end, true)),
        c if is_ident(c) && (i == 0 || !is_ident(src[i - 1])) => {
            if let Some(end) = raw_string_end(src, i) {
                return Some((end, true));
            }
            let end = (i..src.len())
                .find(|&k| !is_ident(src[k]))
                .unwrap_or(src.len());
            Some((end, false))
        }
        _ => None,
    }
}

/// Past the `*/` that closes the block comment opening at `i` (block comments nest).
fn block_comment_end(src: &[char], i: usize) -> usize {
    let mut depth = 0;
    let mut k = i;
    while k + 1 < src.len() {
        if src[k] == '/' && src[k + 1] == '*' {
            depth += 1;
            k += 2;
        } else if src[k] == '*' && src[k + 1] == '/' {
            depth -= 1;
            k += 2;
            if depth == 0 {
                return k;
            }
        } else {
            k += 1;
        }
    }
    src.len()
}

/// Past the `"` that closes a string whose contents start at `from` (`\"` and `\\` escaped).
fn string_end(src: &[char], from: usize) -> usize {
    let mut k = from;
    while k < src.len() {
        match src[k] {
            '\\' => k += 2,
            '"' => return k + 1,
            _ => k += 1,
        }
    }
    src.len()
}

/// Past the closing quote of a char or byte literal opening at `i` (`'x'`, `'\''`,
/// `'\u{7b}'`), or `None` when the quote opens a lifetime or a label (`'a`, `'static`, `'outer:`).
fn char_literal_end(src: &[char], i: usize) -> Option<usize> {
    match (src.get(i + 1), src.get(i + 2)) {
        (Some('\\'), _) => {
            // The escaped character may itself be a quote: the closing one comes after it.
            let from = i + 3;
            (from..src.len()).find(|&k| src[k] == '\'').map(|k| k + 1)
        }
        (Some(c), Some('\'')) if *c != '\'' => Some(i + 3),
        _ => None,
    }
}

/// Past the end of the raw string (`r"…"`, `r#"…"#`, `br##"…"##`, `cr"…"`) starting at `i`, or
/// `None` when `i` starts no raw string (`r#type` is a raw identifier, `rest` a name).
fn raw_string_end(src: &[char], i: usize) -> Option<usize> {
    let after_r = match (src[i], src.get(i + 1)) {
        ('r', _) => i + 1,
        ('b' | 'c', Some('r')) => i + 2,
        _ => return None,
    };
    let hashes = src[after_r..].iter().take_while(|&&c| c == '#').count();
    let open = after_r + hashes;
    if src.get(open) != Some(&'"') {
        return None;
    }
    let closes = |k: usize| src[k] == '"' && (1..=hashes).all(|h| src.get(k + h) == Some(&'#'));
    let close = (open + 1..src.len()).find(|&k| closes(k))?;
    Some(close + 1 + hashes)
}

/// `text` with every comment and every string, raw string, byte and char literal blanked (each
/// character a space, newlines kept, so lines and indices stay those of `text`).
pub fn code_only(text: &str) -> Vec<char> {
    let src: Vec<char> = text.chars().collect();
    let mut code = src.clone();
    let mut i = 0;
    while i < src.len() {
        match token_end(&src, i) {
            Some((end, blank)) => {
                if blank {
                    for c in &mut code[i..end] {
                        if *c != '\n' {
                            *c = ' ';
                        }
                    }
                }
                i = end.max(i + 1);
            }
            None => i += 1,
        }
    }
    code
}

/// Past the end of the item that starts at or after `from` in blanked `code`: its first `;` outside
/// parentheses and brackets, or the brace matching its first `{` outside them.
fn item_end(code: &[char], from: usize) -> usize {
    let mut nesting = 0i32;
    let mut k = from;
    while k < code.len() {
        match code[k] {
            '(' | '[' => nesting += 1,
            ')' | ']' => nesting -= 1,
            ';' if nesting == 0 => return k + 1,
            '{' if nesting == 0 => return matching_brace(code, k) + 1,
            _ => {}
        }
        k += 1;
    }
    code.len()
}

/// The index of the `}` that closes the `{` at `open` (the end of `code` if none does).
fn matching_brace(code: &[char], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Whether an attribute's content (between `#[` and `]`, spaces removed) marks test code.
fn is_test_attribute(content: &str) -> bool {
    content == "test" || content == "cfg(test)" || content.ends_with("::test")
}

/// The char ranges of test items in blanked `code`: each from its test attribute to its end.
fn test_items(code: &[char]) -> Vec<std::ops::Range<usize>> {
    let mut items = Vec::new();
    let mut k = 0;
    while k + 1 < code.len() {
        if code[k] != '#' || code[k + 1] != '[' {
            k += 1;
            continue;
        }
        let close = (k..code.len())
            .find(|&j| code[j] == ']')
            .unwrap_or(code.len());
        let content: String = code[k + 2..close]
            .iter()
            .filter(|c| !c.is_whitespace())
            .collect();
        if is_test_attribute(&content) {
            let end = item_end(code, close + 1);
            items.push(k..end);
            k = end;
        } else {
            k = close + 1;
        }
    }
    items
}

/// The name after `fn ` at `at` (past spaces), if the keyword stands there as a whole word and
/// is followed by a name (not a pointer type `fn(u32)` or a macro's `fn $name`).
fn fn_name(code: &[char], at: usize) -> Option<String> {
    let word = code.get(at..at + 2)? == ['f', 'n'];
    let alone = (at == 0 || !is_ident(code[at - 1])) && code.get(at + 2)?.is_whitespace();
    if !word || !alone {
        return None;
    }
    let start = (at + 2..code.len()).find(|&k| !code[k].is_whitespace())?;
    let raw = code.get(start..start + 2) == Some(&['r', '#']);
    let from = if raw { start + 2 } else { start };
    let name: String = code[from..].iter().take_while(|&&c| is_ident(c)).collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(if raw { format!("r#{name}") } else { name })
}

/// Every function with a body in `text` outside test code, nested ones too, in order.
pub fn functions(text: &str) -> Vec<Function> {
    let code = code_only(text);
    let tests = test_items(&code);
    let line_of = |k: usize| 1 + code[..k].iter().filter(|&&c| c == '\n').count();
    let mut found = Vec::new();
    for at in 0..code.len() {
        if tests.iter().any(|t| t.contains(&at)) {
            continue;
        }
        let Some(name) = fn_name(&code, at) else {
            continue;
        };
        let end = item_end(&code, at);
        if code[end - 1] != '}' {
            continue; // A declaration (`fn f();` in a trait or an extern block): no body.
        }
        let (first, last) = (line_of(at), line_of(end - 1));
        found.push(Function {
            name,
            line: first,
            lines: last - first + 1,
        });
    }
    found
}

/// The names of the modules `text` declares as test modules in files of their own
/// (`#[cfg(test)] mod tests;`).
pub fn test_module_files(text: &str) -> Vec<String> {
    let code = code_only(text);
    test_items(&code)
        .into_iter()
        .filter_map(|range| {
            let item: String = code[range].iter().collect();
            let item = item.rsplit_once(']')?.1.trim();
            let item = item.strip_prefix("pub ").unwrap_or(item).trim_start();
            let name = item.strip_prefix("mod ")?.strip_suffix(';')?.trim();
            Some(name.to_owned())
        })
        .collect()
}

/// The `.rs` files under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Where the files of modules that `file` declares live: beside it for a crate root or a
/// `mod.rs`, else in the directory named after it.
fn module_dir(file: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(""));
    let stem = file.file_stem().unwrap_or_default();
    if ["lib", "main", "mod"].iter().any(|s| stem == *s) {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    }
}

/// Every function over [`LIMIT`] lines outside test code in `crates/*/src` and
/// `crates/*/examples` under `root`, as (path from `root`, function), by path.
pub fn long_functions(root: &Path) -> Vec<(String, Function)> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("a crates directory") {
        let krate = krate.expect("a directory entry").path();
        files.extend(rust_files(&krate.join("src")));
        files.extend(rust_files(&krate.join("examples")));
    }
    files.sort();
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("a readable source file");
            (f, text)
        })
        .collect();
    // Files and directories of `#[cfg(test)] mod NAME;` modules: test code, all of them.
    let mut test_paths = BTreeSet::new();
    for (file, text) in &texts {
        for name in test_module_files(text) {
            test_paths.insert(module_dir(file).join(format!("{name}.rs")));
            test_paths.insert(module_dir(file).join(name));
        }
    }
    let mut long = Vec::new();
    for (file, text) in &texts {
        if test_paths.iter().any(|t| file.starts_with(t)) {
            continue;
        }
        let rel = file.strip_prefix(root).unwrap_or(file);
        let rel = rel.to_string_lossy().replace('\\', "/");
        for f in functions(text).into_iter().filter(|f| f.lines > LIMIT) {
            long.push((rel.clone(), f));
        }
    }
    long
}

/// A function named `name` whose body holds `body` lines of `line`: `body + 2` lines in all.
fn synthetic(name: &str, body: usize, line: &str) -> String {
    let mut text = format!("fn {name}() {{\n");
    for _ in 0..body {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("}\n");
    text
}

#[test]
fn arch_counter_flags_a_function_one_line_over_the_limit() {
    let text = synthetic("at_limit", LIMIT - 2, "    let _ = 1;")
        + &synthetic("over_limit", LIMIT - 1, "    let _ = 1;");
    let found = functions(&text);
    let lengths: Vec<(&str, usize)> = found.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    assert_eq!(lengths, [("at_limit", 150), ("over_limit", 151)]);
    assert_eq!(found[1].line, 151);
    let long: Vec<&str> = found
        .iter()
        .filter(|f| f.lines > LIMIT)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(long, ["over_limit"]);
}

#[test]
fn arch_counter_ignores_braces_in_literals_and_comments() {
    // Each line closes a brace in a literal or comment: counted as code, every one would end
    // the function early (and an opening one would run it on to the end of the file).
    let lines = [
        r#"    let _ = '}'; let _ = b'{'; let _ = '\''; let _ = '\u{7d}';"#,
        r#"    let _ = "}\"{"; let _ = b"}"; let _ = "\\"; // }"#,
        r##"    let _ = r"}"; let _ = r#"}"{"#; let _ = br#"}"#; /* } /* { */ } */"##,
        "    let _: &'static str = \"'\"; 'outer: loop { break 'outer; }",
        "    let r#type = 1; let _ = r#type; let _ = |x: fn(u32) -> u32| x;",
    ];
    let mut text = String::new();
    for (k, line) in lines.iter().enumerate() {
        text += &synthetic(&format!("f{k}"), 10, line);
    }
    text += "fn last() {\n    let _ = \"{\";\n}\n";
    let found = functions(&text);
    let lengths: Vec<(&str, usize)> = found.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    assert_eq!(
        lengths,
        [
            ("f0", 12),
            ("f1", 12),
            ("f2", 12),
            ("f3", 12),
            ("f4", 12),
            ("last", 3)
        ]
    );
}

#[test]
fn arch_counter_leaves_out_test_code_and_declarations() {
    let long_body = synthetic("long_test_helper", LIMIT, "    let _ = 1;");
    let text = format!(
        "trait T {{\n    fn declared(&self);\n}}\n\
         fn outer() {{\n    fn inner() {{}}\n}}\n\
         #[test]\n{}\
         #[cfg(test)]\nmod tests {{\n{long_body}}}\n\
         #[cfg(test)]\nmod more;\n",
        synthetic("long_test", LIMIT, "    let _ = 1;"),
    );
    let found = functions(&text);
    let names: Vec<(&str, usize)> = found.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    assert_eq!(names, [("outer", 3), ("inner", 1)]);
    assert_eq!(test_module_files(&text), ["more"]);
}
