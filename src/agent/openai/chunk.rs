//! One `data:` chunk of a chat completion stream, decoded once into types
//! that borrow from the event's text: a plain token delta costs no
//! allocation (text with JSON escapes is unescaped into its own string),
//! and of `choices` only the first is kept (`n` is never sent).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use super::delta::ToolCallDelta;

/// Text of a delta, borrowed from the event unless it had escapes.
/// (serde borrows a `Cow<str>` field only when it is not inside an
/// `Option`, so the borrowing is written out here.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// `choices[0].delta`: what the turn acts on.
#[derive(Debug, Default, Deserialize)]
pub struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Text<'a>>,
    /// DeepSeek, vLLM.
    #[serde(default, borrow)]
    pub reasoning_content: Option<Text<'a>>,
    /// Ollama, vLLM ≥ 0.10.
    #[serde(default, borrow)]
    pub reasoning: Option<Text<'a>>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A decoded chunk.
#[derive(Debug, Default)]
pub struct Decoded<'a> {
    pub delta: Delta<'a>,
    /// A `finish_reason` was set: the answer is complete (`[DONE]` may follow).
    pub finish: bool,
}

/// Why a chunk is not usable.
#[derive(Debug)]
pub enum ChunkError {
    /// Not the JSON of a chunk.
    Malformed(serde_json::Error),
    /// The server reported a failure inside the stream (its message).
    InStream(String),
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow, deserialize_with = "first_choice")]
    choices: Option<Choice<'a>>,
    /// Some servers (vLLM, OpenRouter) report a failure inside the stream.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    /// Only whether it is set matters.
    #[serde(default)]
    finish_reason: Option<IgnoredAny>,
}

/// The first element of `choices`, the others skipped without a `Vec`.
fn first_choice<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Choice<'a>>, D::Error> {
    struct V<'a>(std::marker::PhantomData<Choice<'a>>);
    impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
        type Value = Option<Choice<'a>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let first = seq.next_element()?;
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    d.deserialize_seq(V(std::marker::PhantomData))
}

/// Decodes one chunk's data.
pub fn decode(data: &str) -> Result<Decoded<'_>, ChunkError> {
    let chunk: Chunk<'_> = serde_json::from_str(data).map_err(ChunkError::Malformed)?;
    if let Some(e) = chunk.error {
        let message = e
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| e.to_string());
        return Err(ChunkError::InStream(message));
    }
    // The usage chunk has no choices.
    let Some(choice) = chunk.choices else {
        return Ok(Decoded::default());
    };
    Ok(Decoded {
        delta: choice.delta.unwrap_or_default(),
        finish: choice.finish_reason.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<'t>(t: &'t Option<Text<'_>>) -> Option<(&'t str, bool)> {
        t.as_ref().map(|t| (&*t.0, matches!(t.0, Cow::Borrowed(_))))
    }

    #[test]
    fn plain_text_is_borrowed_and_escaped_text_is_unescaped() {
        let d = decode(r#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"tok "},"logprobs":null,"finish_reason":null}]}"#).unwrap();
        assert_eq!(text(&d.delta.content), Some(("tok ", true)));
        assert!(!d.finish);
        let d =
            decode(r#"{"choices":[{"delta":{"reasoning_content":"a\nb","reasoning":"\u00e9"}}]}"#)
                .unwrap();
        assert_eq!(text(&d.delta.reasoning_content), Some(("a\nb", false)));
        assert_eq!(text(&d.delta.reasoning), Some(("é", false)));
        assert_eq!(d.delta.content, None);
    }

    #[test]
    fn the_first_choice_counts_and_a_finish_reason_ends_the_answer() {
        let d = decode(
            r#"{"choices":[{"delta":{},"finish_reason":"stop"},{"delta":{"content":"2nd"}}]}"#,
        )
        .unwrap();
        assert!(d.finish);
        assert_eq!(d.delta.content, None);
        let d = decode(r#"{"choices":[],"usage":{"prompt_tokens":1}}"#).unwrap();
        assert!(!d.finish);
        let d = decode(r#"{"choices":[{"index":0,"finish_reason":"tool_calls"}]}"#).unwrap();
        assert!(d.finish);
        let d = decode(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
        )
        .unwrap();
        assert_eq!(d.delta.tool_calls.map(|c| c.len()), Some(1));
    }

    #[test]
    fn errors_in_stream_and_malformed_chunks() {
        match decode(r#"{"error":{"message":"overloaded","code":502}}"#) {
            Err(ChunkError::InStream(m)) => assert_eq!(m, "overloaded"),
            other => panic!("{other:?}"),
        }
        match decode(r#"{"error":"boom"}"#) {
            Err(ChunkError::InStream(m)) => assert_eq!(m, r#""boom""#),
            other => panic!("{other:?}"),
        }
        match decode("{not json}") {
            Err(ChunkError::Malformed(e)) => {
                assert_eq!(e.to_string(), "key must be a string at line 1 column 2");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode(r#"{"choices":[{"delta":{"content":7}}]}"#),
            Err(ChunkError::Malformed(_))
        ));
    }
}
