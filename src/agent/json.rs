//! Compact JSON without reinterpretation.
//!
//! User JSON (tool inputs, ask answers) is kept as the text the client wrote,
//! as a [`RawValue`]. Writing it "compact" must keep object members in input
//! order and numbers exactly as spelled (§10.3 determinism rules), so we
//! never go through `serde_json::Value`: we only strip the whitespace that
//! JSON's grammar allows between tokens. Whitespace inside strings is data
//! and is kept; a string cannot contain a raw control character, so a literal
//! newline never survives minification of valid JSON.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// Returns `raw` without insignificant whitespace (space, tab, CR, LF outside
/// strings). Borrows when there is nothing to strip.
///
/// `raw` is expected to be valid JSON; on other text the function still only
/// removes those four ASCII bytes outside `"…"` runs, so it never panics and
/// always returns valid UTF-8.
pub fn compact_json(raw: &str) -> Cow<'_, str> {
    let bytes = raw.as_bytes();
    let mut out: Option<String> = None;
    let mut run_start = 0;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b' ' | b'\t' | b'\n' | b'\r' => {
                // Whitespace bytes are ASCII, so both slice ends are char
                // boundaries.
                let buf = out.get_or_insert_with(|| String::with_capacity(raw.len()));
                buf.push_str(&raw[run_start..i]);
                run_start = i + 1;
            }
            _ => {}
        }
    }
    match out {
        None => Cow::Borrowed(raw),
        Some(mut buf) => {
            buf.push_str(&raw[run_start..]);
            Cow::Owned(buf)
        }
    }
}

/// The compact form of a raw value, as a raw value (borrowed when already
/// compact).
pub fn compact_raw(raw: &RawValue) -> Cow<'_, RawValue> {
    match compact_json(raw.get()) {
        Cow::Borrowed(_) => Cow::Borrowed(raw),
        // Removing inter-token whitespace from valid JSON leaves valid JSON;
        // should that ever fail, the original spelling is still correct JSON.
        Cow::Owned(s) => match RawValue::from_string(s) {
            Ok(boxed) => Cow::Owned(boxed),
            Err(_) => Cow::Borrowed(raw),
        },
    }
}

/// Parses `text` as a JSON object and returns it in compact form, or `None`
/// when it is not valid JSON or not an object.
pub fn parse_object(text: &str) -> Option<Box<RawValue>> {
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    if !raw.get().starts_with('{') {
        return None;
    }
    RawValue::from_string(compact_json(raw.get()).into_owned()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_whitespace_outside_strings_only() {
        let raw = " { \"a b\" : [ 1 ,\t2.50 ] ,\r\n \"z\":\"x\\\" y\" } ";
        assert_eq!(compact_json(raw), r#"{"a b":[1,2.50],"z":"x\" y"}"#);
    }

    #[test]
    fn borrows_when_already_compact() {
        assert!(matches!(compact_json(r#"{"a":1}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn escaped_backslash_before_quote_ends_string() {
        assert_eq!(compact_json(r#"["\\", 1]"#), r#"["\\",1]"#);
    }

    #[test]
    fn keeps_member_order_and_number_spelling() {
        let obj = parse_object(r#"{"z": 1.0e+3, "a": 100000000000000000000000, "m": -0}"#).unwrap();
        assert_eq!(
            obj.get(),
            r#"{"z":1.0e+3,"a":100000000000000000000000,"m":-0}"#
        );
    }

    #[test]
    fn parse_object_rejects_non_objects_and_bad_json() {
        assert!(parse_object("[1]").is_none());
        assert!(parse_object("\"s\"").is_none());
        assert!(parse_object("{").is_none());
        assert!(parse_object("{} x").is_none());
        assert_eq!(parse_object("  {}  ").unwrap().get(), "{}");
    }

    #[test]
    fn compact_raw_of_whitespace_value() {
        let raw = RawValue::from_string("{ \"a\" : 1 }".to_owned()).unwrap();
        assert_eq!(compact_raw(&raw).get(), r#"{"a":1}"#);
    }
}
