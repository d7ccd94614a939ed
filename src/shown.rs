//! The one sanitizer for text a client shows: every byte that goes from the
//! daemon (and so from an agent, a model server or a repository) to a
//! person's terminal passes [`Shown`] first (docs/decisions.md, "What a
//! client shows of the daemon's text").
//!
//! [`is_hidden`] names what may not reach a terminal as it is: C0 controls,
//! DEL, C1 controls (U+0080–U+009F; U+009B is CSI on some terminals), hence
//! ESC and every CSI/OSC/DCS sequence, and the invisible format characters
//! that reorder or hide text (bidi embeddings, overrides and isolates, the
//! marks, zero-width space, word joiner, BOM, tag characters, line and
//! paragraph separators). Zero-width joiner and non-joiner stay: emoji and
//! scripts need them, and they move nothing.
//!
//! They are made visible, never dropped, so a person sees that something
//! was there: a C0 control as its control picture (`␛`, `␍`, `␀`), DEL as
//! `␡`, anything else as `<U+202E>`. [`Shown::text`] keeps `\n` and `\t`
//! (a message may span lines; `\r\n` is a line end); [`Shown::line`], for a
//! field that must stay on one line (a prompt, a tool line, a choice),
//! shows `\n` as `⏎` and `\t` as a space. [`json`] is the same rule for a
//! JSON line (`zeroclaw rpc`): the characters become `\uXXXX` escapes, which
//! a JSON reader decodes to the same value.
//!
//! Sanitizing is idempotent: what it returns holds no hidden character, so
//! text composed of shown parts and shown again is unchanged.

use std::borrow::Cow;
use std::fmt;

/// Text cleaned for a terminal: only [`Shown::text`] and [`Shown::line`]
/// build one, so an output path typed on `Shown` cannot carry raw bytes.
/// Borrowed when the text needed no change (a streamed chunk is not copied).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shown<'a>(Cow<'a, str>);

impl<'a> Shown<'a> {
    /// `s` with every hidden character visible; `\n` and `\t` kept.
    pub fn text(s: &'a str) -> Shown<'a> {
        Shown(clean(s, false))
    }

    /// `s` on one line: as [`Shown::text`], and `\n` shown as `⏎`, `\t` as a space.
    pub fn line(s: &'a str) -> Shown<'a> {
        Shown(clean(s, true))
    }

    /// At most `max` characters of `s` on one line, `…` when cut (a tool's
    /// input or output in its one-line summary).
    pub fn preview(s: &str, max: usize) -> Shown<'static> {
        let mut head: String = s.chars().take(max).collect();
        if s.chars().nth(max).is_some() {
            head.push('…');
        }
        Shown(Cow::Owned(clean(&head, true).into_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_owned(self) -> Shown<'static> {
        Shown(Cow::Owned(self.0.into_owned()))
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `c` may not reach a terminal as it is (`\n` and `\t` included:
/// callers that keep them say so).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{E0000}'..='\u{E007F}'
        )
}

/// `s` cleaned: borrowed when nothing needed it (the common case, so a
/// streamed answer is not copied).
fn clean(s: &str, one_line: bool) -> Cow<'_, str> {
    let kept = |c: char| !one_line && (c == '\n' || c == '\t');
    if !s.chars().any(|c| is_hidden(c) && !kept(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if kept(c) => out.push(c),
            // A CRLF line end is a line end, not an overwrite.
            '\r' if !one_line && chars.peek() == Some(&'\n') => {}
            '\n' => out.push('⏎'),
            '\t' => out.push(' '),
            c if is_hidden(c) => visible(c, &mut out),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The visible stand-in of a hidden character.
fn visible(c: char, out: &mut String) {
    let code = u32::from(c);
    match code {
        // Control Pictures: U+2400 + the C0 code.
        0..=0x1F => out.push(char::from_u32(0x2400 + code).unwrap_or('\u{FFFD}')),
        0x7F => out.push('␡'),
        _ => out.push_str(&format!("<U+{code:04X}>")),
    }
}

/// A JSON line made safe for a terminal with its meaning kept: every hidden
/// character becomes a `\uXXXX` escape (inside a JSON string that is the
/// same string; valid JSON holds no such character elsewhere). A line that
/// is not JSON is escaped the same way, so it shows as text.
pub fn json(line: &str) -> Cow<'_, str> {
    if !line.chars().any(is_hidden) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if is_hidden(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What no sanitized text may hold: ESC, C1, bidi and the other
    /// invisible format characters, other C0 controls.
    fn clean_of_hidden(s: &str, keep_lines: bool) -> bool {
        s.chars()
            .all(|c| !is_hidden(c) || (keep_lines && (c == '\n' || c == '\t')))
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let s = "hello, wörld — 👩‍💻 مرحبا\n\tnext";
        assert!(matches!(clean(s, false), Cow::Borrowed(_)));
        assert_eq!(Shown::text(s).as_str(), s);
        assert_eq!(Shown::line("a b").as_str(), "a b");
    }

    #[test]
    fn c0_controls_and_del_become_control_pictures() {
        assert_eq!(Shown::text("a\0b\x07c\x08d\x7f").as_str(), "a␀b␇c␈d␡");
        assert_eq!(Shown::text("\x1b[2K").as_str(), "␛[2K");
        // A lone CR would overwrite the line; a CRLF ends it.
        assert_eq!(Shown::text("x\ry").as_str(), "x␍y");
        assert_eq!(Shown::text("x\r\ny").as_str(), "x\ny");
    }

    #[test]
    fn escape_sequences_cannot_survive() {
        let osc52 = "\x1b]52;c;cm0gLXJmIH4=\x07";
        let osc0 = "\x1b]0;pwned\x1b\\";
        let dcs = "\x1bP1$r\x1b\\";
        for s in [osc52, osc0, dcs, "\x1b[2K\r"] {
            let t = Shown::text(s);
            assert!(!t.as_str().contains('\x1b'), "{t}");
            assert!(clean_of_hidden(t.as_str(), true), "{t}");
        }
        assert_eq!(Shown::line(osc52).as_str(), "␛]52;c;cm0gLXJmIH4=␇");
    }

    #[test]
    fn c1_controls_are_shown_by_code() {
        assert_eq!(Shown::text("a\u{9b}2Jb").as_str(), "a<U+009B>2Jb");
        assert_eq!(
            Shown::text("\u{85}\u{80}\u{9f}").as_str(),
            "<U+0085><U+0080><U+009F>"
        );
    }

    #[test]
    fn bidi_and_invisible_format_characters_are_shown_by_code() {
        for c in [
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{200E}',
            '\u{200F}',
            '\u{061C}',
            '\u{200B}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{E0041}',
            '\u{2028}',
            '\u{2029}',
        ] {
            let s = format!("a{c}b");
            assert_eq!(
                Shown::text(&s).as_str(),
                format!("a<U+{:04X}>b", u32::from(c))
            );
        }
        // Joiners move nothing and build emoji and words: kept.
        assert_eq!(
            Shown::text("👩\u{200D}💻 \u{200C}").as_str(),
            "👩\u{200D}💻 \u{200C}"
        );
    }

    #[test]
    fn one_line_fields_show_line_breaks() {
        assert_eq!(Shown::line("rm -rf ~\nls\tx").as_str(), "rm -rf ~⏎ls x");
        assert_eq!(Shown::line("a\r\nb").as_str(), "a␍⏎b");
        assert_eq!(Shown::text("a\nb\tc").as_str(), "a\nb\tc");
    }

    #[test]
    fn previews_are_cut_then_cleaned() {
        assert_eq!(Shown::preview("abc", 3).as_str(), "abc");
        assert_eq!(Shown::preview("ab\ncd", 4).as_str(), "ab⏎c…");
        assert_eq!(Shown::preview("\u{202e}x", 1).as_str(), "<U+202E>…");
    }

    #[test]
    fn sanitizing_is_idempotent() {
        let hostile = "\x1b]52;c;eA==\x07\x1b]0;t\x07\x1b[2K\rok\u{9b}\u{202e}\0\x7f\n";
        for one_line in [false, true] {
            let once = clean(hostile, one_line).into_owned();
            assert_eq!(clean(&once, one_line), once);
            assert!(clean_of_hidden(&once, !one_line), "{once}");
        }
    }

    #[test]
    fn json_lines_keep_their_meaning() {
        let v = serde_json::json!({"t": "a\u{9b}b\u{202e}c\u{7f}\u{E0041}"});
        let line = v.to_string();
        let safe = json(&line);
        assert!(clean_of_hidden(&safe, false), "{safe}");
        assert_eq!(safe, r#"{"t":"a\u009bb\u202ec\u007f\udb40\udc41"}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
        assert!(matches!(json("{\"a\":1}"), Cow::Borrowed(_)));
        assert_eq!(json("not \x1b json"), "not \\u001b json");
    }
}
