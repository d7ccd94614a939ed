//! Text bounded at a byte count (§3.1), the one way the daemon cuts
//! what it stores, logs or answers. Below every module that cuts (the
//! store, the echo agent, error messages, log lines), so none of them
//! reaches sideways into another for it.

use std::borrow::Cow;

/// What `bound_text` appends when it cuts (§3.1).
pub const TRUNCATION_SUFFIX: &str = "…[truncated]";

/// "Bounded at `max`" (§3.1): the longest prefix of at most `max` bytes that
/// ends on a UTF-8 boundary, followed by `…[truncated]` when anything was cut.
pub fn bound_text(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end + TRUNCATION_SUFFIX.len());
    out.push_str(&s[..end]);
    out.push_str(TRUNCATION_SUFFIX);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_text_cuts_on_char_boundaries() {
        assert!(matches!(bound_text("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(bound_text("abcd", 3), "abc…[truncated]");
        // "é" is two bytes: a cut inside it backs off to before it.
        assert_eq!(bound_text("aé", 2), "a…[truncated]");
        assert_eq!(bound_text("aé", 3), "aé");
        assert_eq!(bound_text("€€", 4), "€…[truncated]");
        assert_eq!(bound_text("€", 0), "…[truncated]");
    }
}
