//! What a terminal finally shows for one line of captured output: ANSI escape sequences removed,
//! carriage-return overwrites, backspaces and erase-in-line applied.

/// The escape character that opens ANSI sequences.
const ESC: char = '\u{1b}';
/// The BEL character that may end an OSC sequence.
const BEL: char = '\u{7}';

/// Renders one line (no `\n` inside) the way a terminal would leave it on screen.
///
/// Handles CSI sequences (`ESC [ ... final`), with erase-in-line (`K`) applied and every other CSI
/// (colours, cursor styles) dropped; OSC sequences (`ESC ] ... BEL` or `ESC ] ... ESC \`); two-character
/// escapes; `\r` (back to column 0, later text overwrites earlier text); backspace.
pub fn render_line(line: &str) -> String {
    if !line.contains([ESC, '\r', '\u{8}']) {
        return line.to_owned();
    }
    let mut cells: Vec<char> = Vec::with_capacity(line.len());
    let mut col = 0usize;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\r' => col = 0,
            '\u{8}' => col = col.saturating_sub(1),
            ESC => match chars.next() {
                Some('[') => {
                    let mut params = String::new();
                    let mut fin = None;
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            fin = Some(c);
                            break;
                        }
                        params.push(c);
                    }
                    if fin == Some('K') {
                        match params.as_str() {
                            "" | "0" => cells.truncate(col),
                            "1" => cells.iter_mut().take(col + 1).for_each(|c| *c = ' '),
                            _ => cells.clear(),
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == BEL {
                            break;
                        }
                        if c == ESC {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {}
            },
            c if c.is_control() && c != '\t' => {}
            c => {
                if col < cells.len() {
                    cells[col] = c;
                } else {
                    while cells.len() < col {
                        cells.push(' ');
                    }
                    cells.push(c);
                }
                col += 1;
            }
        }
    }
    cells.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::render_line;

    #[test]
    fn strips_colours_and_applies_overwrites() {
        assert_eq!(render_line("\u{1b}[31merror\u{1b}[0m: bad"), "error: bad");
        assert_eq!(render_line("10%\r50%\r100%"), "100%");
        assert_eq!(render_line("downloading....\rdone"), "doneloading....");
        assert_eq!(render_line("downloading....\r\u{1b}[Kdone"), "done");
        assert_eq!(render_line("abc\u{8}d"), "abd");
        assert_eq!(render_line("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(render_line("crlf\r"), "crlf");
    }

    #[test]
    fn erase_in_line_and_string_terminators() {
        // Erase to the end of the line (`K`, `0K`) from the cursor, from the start to the cursor
        // (`1K`, the cursor's cell included), all of it (`2K`).
        assert_eq!(render_line("progress 10%\rdone\u{1b}[K"), "done");
        assert_eq!(render_line("progress 10%\rdone\u{1b}[0K"), "done");
        assert_eq!(render_line("progress 10%\rdone\u{1b}[1K!"), "    !ess 10%");
        assert_eq!(render_line("progress 10%\rdone\u{1b}[2K"), "");
        // An operating-system command ends at BEL or at ESC \ (string terminator).
        assert_eq!(render_line("\u{1b}]0;title\u{1b}\\text"), "text");
        assert_eq!(
            render_line("\u{1b}]8;;https://x.test\u{1b}\\link\u{1b}]8;;\u{1b}\\ ok"),
            "link ok"
        );
    }
}
