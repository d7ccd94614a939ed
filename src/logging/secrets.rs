//! The configured secrets, and their mask in everything the daemon shows:
//! every log line (stderr, and the capture `logs/query` and
//! `logs/subscribe` read) and every frame written to a client. The set is
//! installed from the config at startup and at each commit
//! (`config::secret_values`: agent `env` values of added backends, the
//! values behind `api_key_env`, paired-token digests).
//!
//! A value shorter than [`MIN_SECRET_BYTES`] is not treated as one: no
//! credential is that short, and masking `1` or `true` everywhere would
//! mangle every line. In JSON text (a frame, a JSON log line) only
//! occurrences inside one string are replaced, in their raw or JSON-escaped
//! form, so the text stays valid JSON with the same shape; plain text is
//! replaced wherever it matches. Each form is found with one prebuilt
//! `memchr::memmem` finder: a line with no secret costs one SIMD scan per
//! form, and nothing at all while no secret is configured.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use memchr::memmem::Finder;

/// What a secret is replaced with (as `config/get` shows masked values).
pub const MASK: &str = "****";
/// Values shorter than this are not masked (see the module doc).
pub const MIN_SECRET_BYTES: usize = 8;

/// A set of secrets, each as the forms it can take in text.
#[derive(Debug, Default)]
pub struct Secrets {
    /// Raw and JSON-escaped forms, longest first (a secret containing
    /// another is masked whole).
    forms: Vec<Finder<'static>>,
}

impl Secrets {
    /// The secrets among `values` (duplicates and short values dropped).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut texts: Vec<String> = Vec::new();
        for v in values.into_iter().filter(|v| v.len() >= MIN_SECRET_BYTES) {
            let escaped = serde_json::to_string(&v)
                .ok()
                .and_then(|q| Some(q.get(1..q.len().checked_sub(1)?)?.to_owned()));
            if let Some(e) = escaped.filter(|e| *e != v) {
                texts.push(e);
            }
            texts.push(v);
        }
        texts.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        texts.dedup();
        let forms = texts
            .iter()
            .map(|t| Finder::new(t.as_bytes()).into_owned())
            .collect();
        Self { forms }
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// Every occurrence `(start, len)` of any form in `text`, by start,
    /// the longest first where several start together.
    fn matches(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut found: Vec<(usize, usize)> = Vec::new();
        for f in &self.forms {
            let len = f.needle().len();
            found.extend(f.find_iter(text).map(|at| (at, len)));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        found
    }

    /// `text` with every occurrence replaced.
    pub fn mask_plain<'t>(&self, text: &'t [u8]) -> Cow<'t, [u8]> {
        replace(text, self.matches(text), |_| true)
    }

    /// `text` with every occurrence replaced (UTF-8 in, UTF-8 out: a form
    /// is valid UTF-8, so it starts and ends on character boundaries).
    pub fn mask_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.mask_plain(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
        }
    }

    /// JSON `text` with the occurrences that start on a character inside a
    /// string replaced. A form holds no unescaped quote, so such an
    /// occurrence ends inside the same string: the JSON keeps its shape.
    pub fn mask_json<'t>(&self, text: &'t [u8]) -> Cow<'t, [u8]> {
        let found = self.matches(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let inside = string_char_starts(text);
        replace(text, found, |at| inside.get(at).copied().unwrap_or(false))
    }
}

/// `text` with the non-overlapping `found` occurrences that `keep` accepts
/// replaced by [`MASK`].
fn replace<'t>(
    text: &'t [u8],
    found: Vec<(usize, usize)>,
    keep: impl Fn(usize) -> bool,
) -> Cow<'t, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    for (at, len) in found {
        if at < copied || !keep(at) {
            continue;
        }
        let o = out.get_or_insert_with(|| Vec::with_capacity(text.len()));
        o.extend_from_slice(&text[copied..at]);
        o.extend_from_slice(MASK.as_bytes());
        copied = at + len;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.extend_from_slice(&text[copied..]);
            Cow::Owned(o)
        }
    }
}

/// For each byte of JSON `text`: whether a character of a string's content
/// starts there (not a quote, not inside an escape sequence).
fn string_char_starts(text: &[u8]) -> Vec<bool> {
    let mut starts = vec![false; text.len()];
    let mut in_string = false;
    // Bytes of an escape sequence still to come after the current one.
    let mut escape_left = 0u8;
    for (i, &b) in text.iter().enumerate() {
        if !in_string {
            in_string = b == b'"';
            continue;
        }
        if escape_left > 0 {
            // `\X`: X; `\uXXXX`: u and four hex digits.
            escape_left = if escape_left == 5 && b != b'u' {
                0
            } else {
                escape_left - 1
            };
            continue;
        }
        match b {
            b'"' => in_string = false,
            b'\\' => {
                starts[i] = true;
                escape_left = 5;
            }
            _ => starts[i] = true,
        }
    }
    starts
}

static ANY: AtomicBool = AtomicBool::new(false);
static CURRENT: RwLock<Option<Arc<Secrets>>> = RwLock::new(None);

/// Replaces the daemon's set of secrets (at startup, and when the config changes).
pub fn install(values: impl IntoIterator<Item = String>) {
    let secrets = Secrets::new(values);
    let any = !secrets.is_empty();
    *CURRENT.write().unwrap_or_else(|p| p.into_inner()) = any.then(|| Arc::new(secrets));
    ANY.store(any, Ordering::Release);
}

/// The daemon's secrets, `None` while there are none.
pub fn current() -> Option<Arc<Secrets>> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    CURRENT.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `text` masked with the daemon's secrets.
pub fn mask_str(text: &str) -> Cow<'_, str> {
    current().map_or(Cow::Borrowed(text), |s| s.mask_str(text))
}

/// A JSON frame or line masked with the daemon's secrets.
pub fn mask_json(text: &[u8]) -> Cow<'_, [u8]> {
    current().map_or(Cow::Borrowed(text), |s| s.mask_json(text))
}

/// A plain-text line masked with the daemon's secrets.
pub fn mask_plain(text: &[u8]) -> Cow<'_, [u8]> {
    current().map_or(Cow::Borrowed(text), |s| s.mask_plain(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(values: &[&str]) -> Secrets {
        Secrets::new(values.iter().map(|v| v.to_string()))
    }

    #[test]
    fn short_values_are_not_secrets_and_the_longest_form_wins() {
        let set = s(&["1", "true", "sk-abcdefgh", "sk-abcdefgh-long"]);
        assert_eq!(
            set.mask_str("true 1 sk-abcdefgh-long and sk-abcdefgh."),
            "true 1 **** and ****."
        );
        assert!(matches!(set.mask_str("nothing here"), Cow::Borrowed(_)));
        assert!(s(&["short"]).is_empty());
    }

    #[test]
    fn json_is_masked_inside_strings_only_and_stays_valid() {
        let set = s(&["12345678", "sk-abcdefgh", "pa\"ss\\word"]);
        let line = br#"{"n":12345678,"m":"key sk-abcdefgh, 12345678","e":"x pa\"ss\\word y"}"#;
        let out = set.mask_json(line);
        let text = std::str::from_utf8(&out).unwrap();
        assert_eq!(
            text,
            r#"{"n":12345678,"m":"key ****, ****","e":"x **** y"}"#
        );
        serde_json::from_str::<serde_json::Value>(text).unwrap();
    }

    #[test]
    fn an_occurrence_inside_an_escape_sequence_is_left() {
        // `\u0041bcdefgh`: the secret `u0041bcd…` starts inside the escape.
        let set = s(&["u0041bcdefgh"]);
        let line = br#"{"a":"\u0041bcdefgh","b":"u0041bcdefgh"}"#;
        assert_eq!(
            std::str::from_utf8(&set.mask_json(line)).unwrap(),
            r#"{"a":"\u0041bcdefgh","b":"****"}"#
        );
        let set = s(&["nabcdefgh"]);
        assert_eq!(
            std::str::from_utf8(&set.mask_json(br#"{"a":"\nabcdefgh","b":"nabcdefgh"}"#)).unwrap(),
            r#"{"a":"\nabcdefgh","b":"****"}"#
        );
    }
}
