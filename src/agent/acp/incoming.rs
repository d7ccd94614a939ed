//! What one line from the agent says: a response to us, a request or a
//! notification of the agent, and, decoded apart, the message a turn is
//! made of, a `session/update` text chunk.
//!
//! Each line is decoded once, into borrowed typed fields: a chunk's text is
//! the only thing copied out of it, and only the payloads of the other
//! messages become [`Value`]s. A line the typed pass does not take (not an
//! object, a member of an unexpected type, a member twice) goes through the
//! general [`serde_json::Value`] classification, which words the fault, so
//! what is accepted and what is refused is the same either way.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::wire::{ReadFault, QUOTED_BYTES};

/// One message from the agent.
#[derive(Debug)]
pub enum FromAgent {
    /// The answer to one of our requests (`result` or `error`).
    Response {
        id: i64,
        result: Result<Value, WireError>,
    },
    /// A request of the agent; it must be answered.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification of the agent (a `session/update` chunk is a [`Chunk`]).
    Notification { method: String, params: Value },
    /// A `session/update` of kind `agent_message_chunk` or
    /// `agent_thought_chunk` whose content is a text block.
    Chunk(Chunk),
}

/// The text of one message or thought chunk, and whose it is.
#[derive(Debug, PartialEq, Eq)]
pub struct Chunk {
    pub session_id: String,
    pub thought: bool,
    pub text: String,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct WireError {
    pub code: i64,
    pub message: String,
}

/// Classifies one line.
pub fn parse(line: &[u8]) -> Result<FromAgent, ReadFault> {
    if let Some(chunk) = chunk_of(line) {
        return Ok(FromAgent::Chunk(chunk));
    }
    match typed(line) {
        Some(m) => Ok(m),
        None => general(line),
    }
}

/// The members of a JSON-RPC message, borrowed from the line. A member
/// that is present is `Some`, even when it is `null`.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A `session/update` notification as far as a chunk needs it: read in
/// one pass, since it is nearly every line of a turn. Names are `&str`: one
/// with an escape fails this pass and takes the general one, like any line
/// this pass does not take.
#[derive(Deserialize)]
struct ChunkLine<'a> {
    jsonrpc: &'a str,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    method: &'a str,
    #[serde(borrow)]
    params: UpdateParams<'a>,
}

/// `session/update` params as far as a chunk needs them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams<'a> {
    session_id: &'a str,
    #[serde(borrow)]
    update: ChunkUpdate<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChunkUpdate<'a> {
    session_update: &'a str,
    #[serde(borrow)]
    content: Option<TextBlock<'a>>,
}

/// A content block; its text may have escapes (a newline often does).
#[derive(Deserialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

/// The typed decode of any other message; `None` leaves the line to
/// [`general`].
fn typed(line: &[u8]) -> Option<FromAgent> {
    let m: Envelope = serde_json::from_slice(line).ok()?;
    if m.jsonrpc.as_deref() != Some("2.0") {
        return None;
    }
    let value = |raw: Option<&RawValue>| match raw {
        Some(r) => serde_json::from_str::<Value>(r.get()).ok(),
        None => Some(Value::Null),
    };
    let Some(method) = m.method else {
        // A response: ours have integer ids and exactly one of the two.
        let id = serde_json::from_str::<i64>(m.id?.get()).ok()?;
        let result = match (m.result, m.error) {
            (Some(r), None) => Ok(value(Some(r))?),
            (None, Some(e)) => Err(wire_error(&value(Some(e))?)),
            _ => return None,
        };
        return Some(FromAgent::Response { id, result });
    };
    let params = value(m.params)?;
    let method = method.into_owned();
    Some(match m.id {
        Some(id) => FromAgent::Request {
            id: value(Some(id))?,
            method,
            params,
        },
        None => FromAgent::Notification { method, params },
    })
}

/// The chunk a line carries, if it is a `session/update` text chunk.
fn chunk_of(line: &[u8]) -> Option<Chunk> {
    let m: ChunkLine = serde_json::from_slice(line).ok()?;
    if m.jsonrpc != "2.0" || m.id.is_some() || m.method != "session/update" {
        return None;
    }
    let p = m.params;
    let thought = match p.update.session_update {
        "agent_message_chunk" => false,
        "agent_thought_chunk" => true,
        _ => return None,
    };
    let block = p.update.content?;
    if block.kind != "text" {
        return None;
    }
    Some(Chunk {
        session_id: p.session_id.to_owned(),
        thought,
        text: block.text?.into_owned(),
    })
}

fn wire_error(e: &Value) -> WireError {
    WireError {
        code: e.get("code").and_then(Value::as_i64).unwrap_or(-32603),
        message: e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    }
}

/// The classification of any line through a [`Value`], wording what is
/// wrong with a line that is not a message.
fn general(line: &[u8]) -> Result<FromAgent, ReadFault> {
    let invalid = |what: &str| {
        let shown = String::from_utf8_lossy(&line[..line.len().min(QUOTED_BYTES)]).into_owned();
        ReadFault::Invalid(format!("{what}: {shown:?}"))
    };
    let mut v: Value = serde_json::from_slice(line).map_err(|_| invalid("not JSON"))?;
    let Some(obj) = v.as_object_mut() else {
        return Err(invalid("not an object"));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("no \"jsonrpc\": \"2.0\""));
    }
    let id = obj.remove("id");
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            Ok(match id {
                Some(id) => FromAgent::Request { id, method, params },
                None => FromAgent::Notification { method, params },
            })
        }
        Some(_) => Err(invalid("\"method\" is not a string")),
        None => {
            // Our ids are integers; an answer to anything else is not ours.
            let Some(id) = id.as_ref().and_then(Value::as_i64) else {
                return Err(invalid("a response without one of our ids"));
            };
            let result = match (obj.remove("result"), obj.remove("error")) {
                (Some(r), None) => Ok(r),
                (None, Some(e)) => Err(wire_error(&e)),
                _ => return Err(invalid("a response needs exactly one of result and error")),
            };
            Ok(FromAgent::Response { id, result })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified() {
        let m = parse(br#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#).unwrap();
        assert!(matches!(
            m,
            FromAgent::Response {
                id: 3,
                result: Ok(_)
            }
        ));
        let m = parse(br#"{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file"}"#).unwrap();
        assert!(
            matches!(m, FromAgent::Request { ref method, .. } if method == "fs/read_text_file")
        );
        let m = parse(br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"no"}}"#);
        assert!(matches!(
            m,
            Ok(FromAgent::Response {
                id: 4,
                result: Err(WireError { code: -32000, .. })
            })
        ));
        for bad in [
            &b"garbage"[..],
            b"[1]",
            br#"{"id":1,"result":1}"#,
            br#"{"jsonrpc":"2.0","id":"s","result":1}"#,
        ] {
            assert!(matches!(parse(bad), Err(ReadFault::Invalid(_))), "{bad:?}");
        }
    }

    fn update(update: &str) -> FromAgent {
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#
        );
        parse(line.as_bytes()).unwrap()
    }

    #[test]
    fn text_chunks_are_decoded_in_one_pass_with_their_escapes() {
        let m = update(
            r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"a\"\u00e9\n"},"_meta":{}}"#,
        );
        let FromAgent::Chunk(c) = m else {
            panic!("not a chunk: {m:?}")
        };
        assert_eq!(
            c,
            Chunk {
                session_id: "s1".into(),
                thought: true,
                text: "a\"é\n".into()
            }
        );
    }

    #[test]
    fn other_updates_stay_notifications_with_their_params_whole() {
        for u in [
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"x"}}"#,
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":7}}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"t","content":[{"type":"text"}]}"#,
            r#"{"sessionUpdate":"plan","entries":[]}"#,
        ] {
            let FromAgent::Notification { method, params } = update(u) else {
                panic!("{u} is not a notification")
            };
            assert_eq!(method, "session/update");
            let want: Value = serde_json::from_str(u).unwrap();
            assert_eq!(params["update"], want, "{u}");
        }
    }

    #[test]
    fn the_typed_pass_and_the_general_one_agree() {
        // Lines the typed pass leaves to the general one, and lines it
        // takes: the classification is the same (null members count as
        // present, a duplicate member is the general rule's).
        let lines: [&[u8]; 10] = [
            br#"{"jsonrpc":"2.0","id":5,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#,
            br#"{"jsonrpc":"1.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
            br#"{"jsonrpc":"2.0","method":7}"#,
            br#"{"jsonrpc":"2.0","method":"a","method":"b"}"#,
            br#"{"jsonrpc":2,"method":"a"}"#,
            br#"{"jsonrpc":"2.0","method":"n","params":[1,{"b":2}]}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
        ];
        for line in lines {
            assert_eq!(
                format!("{:?}", parse(line)),
                format!("{:?}", general(line)),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
