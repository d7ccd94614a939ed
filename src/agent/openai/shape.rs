//! The events of a token stream are one shape with a different string in
//! it: the same `id`, `object`, `created`, `model`, `choices[0].index` and
//! `finish_reason: null` around `delta.content`. [`Decoder`] keeps the bytes
//! before and after the content string of the last event that carried only
//! content, and an event that has exactly those bytes around a plain string
//! is that event with another text: its content is taken without decoding
//! the rest again.
//!
//! Exact by construction: the bytes before the string end in its opening
//! quote, the bytes after it start with its closing quote, and the new
//! string holds no quote, backslash or control character, so the new event
//! parses as the old one with only that string changed. Any other event
//! (another shape, escapes, reasoning, tool calls, a finish reason, an
//! error) goes through the whole decode ([`chunk::decode`]), which also
//! learns the next shape.

use std::borrow::Cow;

use super::chunk::{self, ChunkError, Decoded, Delta, Text};

/// Decodes the chunks of one answer.
#[derive(Debug, Default)]
pub struct Decoder {
    shape: Option<Shape>,
}

/// The bytes around the content string of a content-only event.
#[derive(Debug)]
struct Shape {
    /// Up to and with the string's opening quote.
    before: String,
    /// From the string's closing quote to the end.
    after: String,
}

impl Decoder {
    /// Decodes one event's data.
    pub fn decode<'a>(&mut self, data: &'a str) -> Result<Decoded<'a>, ChunkError> {
        if let Some(text) = self.shape.as_ref().and_then(|s| s.content_in(data)) {
            let delta = Delta {
                content: Some(Text(Cow::Borrowed(text))),
                ..Delta::default()
            };
            return Ok(Decoded {
                delta,
                finish: false,
            });
        }
        let decoded = chunk::decode(data)?;
        self.shape = Shape::of(data, &decoded);
        Ok(decoded)
    }
}

impl Shape {
    /// The shape of `data` if it decoded to borrowed content text alone.
    fn of(data: &str, d: &Decoded<'_>) -> Option<Shape> {
        let delta = &d.delta;
        if d.finish
            || delta.reasoning_content.is_some()
            || delta.reasoning.is_some()
            || delta.tool_calls.is_some()
        {
            return None;
        }
        let Some(Text(Cow::Borrowed(text))) = &delta.content else {
            return None;
        };
        // Where the decoder took the string from (it borrowed it: no escapes).
        let start = (text.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
        let end = start.checked_add(text.len())?;
        let bytes = data.as_bytes();
        let quoted =
            start > 0 && bytes.get(start - 1) == Some(&b'"') && bytes.get(end) == Some(&b'"');
        if !quoted || text.is_empty() {
            return None;
        }
        Some(Shape {
            before: data.get(..start)?.to_owned(),
            after: data.get(end..)?.to_owned(),
        })
    }

    /// The content of `data` if it is this shape around a plain string.
    fn content_in<'a>(&self, data: &'a str) -> Option<&'a str> {
        let rest = data.strip_prefix(self.before.as_str())?;
        let text = rest.strip_suffix(self.after.as_str())?;
        let plain = !text.is_empty() && !text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        plain.then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = r#"{"id":"c-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}"#;

    fn with(content: &str) -> String {
        EVENT.replace(r#""tok""#, content)
    }

    /// Content, reasoning, tool calls and finish of a decode, or its error.
    fn said(r: Result<Decoded<'_>, ChunkError>) -> String {
        match r {
            Ok(d) => format!(
                "{:?} {:?} {:?} {} {}",
                d.delta.content.map(|t| t.0.into_owned()),
                d.delta.reasoning_content.map(|t| t.0.into_owned()),
                d.delta.reasoning.map(|t| t.0.into_owned()),
                d.delta.tool_calls.map_or(0, |c| c.len()),
                d.finish
            ),
            Err(e) => format!("error {e:?}"),
        }
    }

    #[test]
    fn a_stream_of_one_shape_reuses_it_and_says_what_the_whole_decode_says() {
        let events = [
            EVENT.to_owned(),
            with(r#""next""#),
            with(r#""é 世界 ""#),
            with(r#""a\nb""#),
            with(r#""q\"uote""#),
            with(r#""""#),
            with(r#""x","role":"assistant""#),
            with(r#"7"#),
            EVENT.replace(r#""finish_reason":null"#, r#""finish_reason":"stop""#),
            with(r#""after""#),
            EVENT.replace(r#"{"content":"tok"}"#, r#"{"reasoning":"hm"}"#),
            EVENT.replace(r#""c-1""#, r#""c-2""#),
            with(r#""x"},"finish_reason":"stop"}],"z":{"a":"b""#),
            with(r#""last""#),
        ];
        let mut dec = Decoder::default();
        for e in &events {
            assert_eq!(said(dec.decode(e)), said(chunk::decode(e)), "{e}");
        }
    }

    #[test]
    fn a_content_only_event_teaches_the_bytes_around_its_string() {
        let mut dec = Decoder::default();
        assert!(dec.decode(EVENT).is_ok());
        let shape = dec.shape.as_ref().expect("a shape learned");
        assert!(
            shape.before.ends_with(r#""delta":{"content":""#),
            "{shape:?}"
        );
        assert_eq!(shape.after, r#""},"finish_reason":null}]}"#);
        assert_eq!(shape.content_in(&with(r#""next""#)), Some("next"));
        // A finish reason is not a content-only event: nothing is learned.
        let stop = EVENT.replace(r#""finish_reason":null"#, r#""finish_reason":"stop""#);
        assert!(dec.decode(&stop).is_ok());
        assert!(dec.shape.is_none());
    }

    #[test]
    fn only_plain_strings_between_the_same_bytes_take_the_short_way() {
        let shape = Shape {
            before: r#"{"a":""#.into(),
            after: r#""}"#.into(),
        };
        assert_eq!(shape.content_in(r#"{"a":"xyz"}"#), Some("xyz"));
        for other in [
            r#"{"a":"x\"y"}"#,
            r#"{"a":"x"y"}"#,
            r#"{"a":""}"#,
            r#"{"b":"x"}"#,
            r#"{"a":"x"} "#,
            "{\"a\":\"x\ty\"}",
        ] {
            assert_eq!(shape.content_in(other), None, "{other}");
        }
    }
}
