//! The envelope of a plain frame, read without a parser: an object whose
//! member names are lowercase letters and whose values are strings without
//! escapes or control characters, numbers, `true`, `false` or `null` (a
//! `status` call, a notification without params, most responses' ids).
//! Anything else — a nested value, an escape, a stray byte — is left to
//! serde_json, which then reads the whole frame: this path only ever
//! accepts valid JSON, and reads it as serde_json would (a repeated member
//! keeps its last value; unknown members are checked and ignored).

use super::Envelope;

/// How almost every client begins a request: the version, then the method.
/// A frame that begins so is read from its method's string on, with the
/// two members before it taken as they are (the same members, values and
/// order the scanner would find byte by byte).
const CANONICAL_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":""#;
/// Where the version's text (`"2.0"`, quotes included) lies in that head.
const CANONICAL_VERSION: std::ops::Range<usize> = 11..16;

/// The members of `frame` if it is a plain object, else `None`.
pub(super) fn plain_envelope(frame: &str) -> Option<Envelope<'_>> {
    let mut s = Scanner {
        text: frame.as_bytes(),
        at: 0,
    };
    let mut env = Envelope::default();
    let mut more = if s.text.starts_with(CANONICAL_HEAD) {
        env.jsonrpc = Some(frame.get(CANONICAL_VERSION)?);
        // At the method string's opening quote.
        s.at = CANONICAL_HEAD.len() - 1;
        env.method = Some(frame.get(s.value()?)?);
        s.after_member()?
    } else {
        s.skip_ws();
        s.expect(b'{')?;
        s.skip_ws();
        let empty = s.peek() == Some(b'}');
        if empty {
            s.at += 1;
        }
        !empty
    };
    while more {
        let name = s.name()?;
        s.skip_ws();
        s.expect(b':')?;
        s.skip_ws();
        let value = frame.get(s.value()?)?;
        match name {
            b"jsonrpc" => env.jsonrpc = Some(value),
            b"method" => env.method = Some(value),
            b"id" => env.id = Some(value),
            b"params" => env.params = Some(value),
            b"result" => env.result = Some(value),
            b"error" => env.error = Some(value),
            _ => {}
        }
        more = s.after_member()?;
    }
    s.skip_ws();
    (s.at == s.text.len()).then_some(env)
}

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn expect(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// What follows a member's value: `Some(true)` after a `,` (another
    /// member comes), `Some(false)` after the closing `}`.
    fn after_member(&mut self) -> Option<bool> {
        self.skip_ws();
        match self.next()? {
            b',' => {
                self.skip_ws();
                Some(true)
            }
            b'}' => Some(false),
            _ => None,
        }
    }

    /// JSON's four whitespace bytes.
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// A member name of lowercase ASCII letters, between quotes.
    fn name(&mut self) -> Option<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.at;
        while self.peek()?.is_ascii_lowercase() {
            self.at += 1;
        }
        let name = self.text.get(start..self.at)?;
        self.expect(b'"')?;
        Some(name)
    }

    /// Where a plain value lies: a string, a number or a literal.
    fn value(&mut self) -> Option<std::ops::Range<usize>> {
        let start = self.at;
        match self.peek()? {
            b'"' => self.string()?,
            b'-' | b'0'..=b'9' => self.number()?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            _ => return None,
        }
        Some(start..self.at)
    }

    /// A string without escapes or control characters (the frame is
    /// UTF-8 already).
    fn string(&mut self) -> Option<()> {
        self.expect(b'"')?;
        loop {
            match self.next()? {
                b'"' => return Some(()),
                b'\\' | 0..=0x1f => return None,
                _ => {}
            }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.text.get(self.at..end)? == word).then(|| self.at = end)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{classify, classify_parsed, Envelope};
    use super::*;

    /// The serde_json reading of a frame, for comparison.
    fn parsed(frame: &str) -> Option<Envelope<'_>> {
        serde_json::from_str(frame).ok()
    }

    fn same(a: &Envelope<'_>, b: &Envelope<'_>) -> bool {
        (a.jsonrpc, a.method, a.id, a.params, a.result, a.error)
            == (b.jsonrpc, b.method, b.id, b.params, b.result, b.error)
    }

    /// Frames the scanner reads: each exactly as serde_json does.
    const PLAIN: &[&str] = &[
        r#"{"jsonrpc":"2.0","method":"status","id":17}"#,
        r#" { "jsonrpc" : "2.0" ,	"method":"status" , "id" : "a b" } "#,
        r#"{"jsonrpc":"2.0","method":"x","id":-0.5e+10}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":0,"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"x","extra":true,"other":null,"id":2E3}"#,
        r#"{"jsonrpc":"2.0","result":null,"id":"zc-out-0"}"#,
        r#"{"jsonrpc":"2.0","method":"é ✓","id":1.25}"#,
        r#"{"jsonrpc":"2.0","method":"s","params":3,"id":null}"#,
        r#"{}"#,
        "{\r\n}",
        r#"{"jsonrpc":"2.0","method":"status"}"#,
        r#"{"jsonrpc":"2.0","method":"","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"a","jsonrpc":"1.0","method":"b","id":2}"#,
        r#"{"jsonrpc":"2.0","method":"x" , "id" : 3 }"#,
        // The same members through the generic path (not the canonical head).
        r#" {"jsonrpc":"2.0","method":"status","id":17}"#,
        r#"{"method":"status","jsonrpc":"2.0","id":17}"#,
        r#"{"id":17,"jsonrpc":"2.0","method":"status"}"#,
    ];

    /// Frames it leaves to serde_json (some valid, some not).
    const NOT_PLAIN: &[&str] = &[
        r#"{"jsonrpc":"2.0","method":"status","params":{},"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"st\u0061tus"}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":"a\"b"}"#,
        r#"{"Method":"x"}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":01}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1.}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1e}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":-}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":+1}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":tru}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":nul}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1,}"#,
        r#"{"jsonrpc":"2.0","method":"x" "id":1}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1} x"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1}}"#,
        "{\"method\":\"a\tb\"}",
        "{\"method\":\"x\"\u{b}}",
        r#"{"jsonrpc":"2.0","method":"x","id":[1]}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1"#,
        r#"{"jsonrpc":"2.0","method":"x","id""#,
        r#"{"#,
        r#"{"jsonrpc":"2.0","method":"#,
        r#"{"jsonrpc":"2.0","method":"st\"atus","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"status","id":1,}"#,
        r#"{"jsonrpc":"2.0","method":"status"}x"#,
        r#"[]"#,
        r#""x""#,
        "",
        "   ",
    ];

    #[test]
    fn the_canonical_version_span_is_the_version_in_the_head() {
        assert_eq!(CANONICAL_HEAD.get(CANONICAL_VERSION), Some(&b"\"2.0\""[..]));
    }

    #[test]
    fn plain_frames_read_as_serde_json_reads_them() {
        for frame in PLAIN {
            let fast = plain_envelope(frame).unwrap_or_else(|| panic!("not plain: {frame}"));
            let slow = parsed(frame).unwrap_or_else(|| panic!("not JSON: {frame}"));
            assert!(same(&fast, &slow), "{frame}");
        }
    }

    #[test]
    fn everything_else_is_left_to_serde_json() {
        for frame in NOT_PLAIN {
            assert!(plain_envelope(frame).is_none(), "read as plain: {frame}");
        }
    }

    #[test]
    fn every_prefix_and_every_byte_changed_agrees_with_serde_json() {
        // Whatever the scanner accepts, serde_json accepts with the same members.
        let mut frames: Vec<String> = Vec::new();
        for frame in PLAIN.iter().chain(NOT_PLAIN) {
            for cut in 0..=frame.len() {
                if let Some(prefix) = frame.get(..cut) {
                    frames.push(prefix.to_owned());
                }
            }
            for (i, _) in frame.char_indices() {
                for b in [
                    b'"', b'\\', b'{', b'}', b',', b':', b'0', b'-', b'e', b' ', 1,
                ] {
                    let mut bytes = frame.as_bytes().to_vec();
                    bytes[i] = b;
                    if let Ok(s) = String::from_utf8(bytes) {
                        frames.push(s);
                    }
                }
            }
        }
        for frame in &frames {
            if let Some(fast) = plain_envelope(frame) {
                let slow = parsed(frame).unwrap_or_else(|| panic!("accepted invalid: {frame:?}"));
                assert!(same(&fast, &slow), "{frame:?}");
            }
            // And the classification is the same either way.
            assert_eq!(
                format!("{:?}", classify(frame)),
                format!("{:?}", classify_parsed(frame)),
                "{frame:?}"
            );
        }
    }
}
