//! A streamed text chunk rewritten as its ACP frame without decoding it.
//!
//! A turn streams one daemon line per chunk, and the bridge's whole cost
//! per chunk is what it does with that line. The daemon writes a chunk
//! with one serializer, members in one order:
//!
//! `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"ID","type":"KIND","text":TEXT}}`
//!
//! so the ACP frame is the same session id and the same JSON string
//! `TEXT`, escapes and all, spliced into ACP's shape. The splice checks
//! what it copies: the id holds no escape or quote, and `TEXT` is one JSON
//! string (every quote escaped, no raw control byte), so no line can break
//! the editor's framing. Any other line (another member order, other
//! members, an escape in the id) returns `None` and takes the decoding
//! path; both give the same bytes (tested below).

/// Everything before the session id.
const OPENING: &[u8] = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":""#;
const BEFORE_KIND: &[u8] = br#"","type":""#;
const BEFORE_TEXT: &[u8] = br#"","text":"#;
const CLOSING: &[u8] = b"}}";

/// Appends the ACP frame of a daemon chunk line to `frame` (the editor's
/// batch, so a chunk costs no allocation of its own) and says `true`, if
/// the line is a text chunk in the daemon's own form; else appends nothing.
pub fn splice_into(line: &[u8], frame: &mut Vec<u8>) -> bool {
    match parts(line) {
        Some((id, kind, text)) => {
            frame.extend_from_slice(OPENING);
            frame.extend_from_slice(id);
            frame.extend_from_slice(br#"","update":{"sessionUpdate":""#);
            frame.extend_from_slice(kind);
            frame.extend_from_slice(br#"","content":{"type":"text","text":"#);
            frame.extend_from_slice(text);
            frame.extend_from_slice(b"}}}}");
            true
        }
        None => false,
    }
}

/// The session id, the kind and the text (a JSON string) of a chunk line.
fn parts(line: &[u8]) -> Option<(&[u8], &'static [u8], &[u8])> {
    let rest = line.strip_prefix(OPENING)?;
    let id_end = rest.iter().position(|b| *b == b'"' || *b == b'\\')?;
    let (id, rest) = rest.split_at(id_end);
    let rest = rest.strip_prefix(BEFORE_KIND)?;
    let kind: &'static [u8] = if rest.starts_with(b"agent_message_chunk\"") {
        b"agent_message_chunk"
    } else if rest.starts_with(b"agent_thought_chunk\"") {
        b"agent_thought_chunk"
    } else {
        return None;
    };
    let text = rest[kind.len()..]
        .strip_prefix(BEFORE_TEXT)?
        .strip_suffix(CLOSING)?;
    if !is_one_json_string(text) {
        return None;
    }
    Some((id, kind, text))
}

/// `s` is exactly one JSON string literal: quotes at both ends, every
/// quote between them escaped, no raw control byte. (Escapes are copied
/// as they are; a malformed `\u` stays the editor's parser's to refuse,
/// as it would be in any frame.)
fn is_one_json_string(s: &[u8]) -> bool {
    let Some(inner) = s.strip_prefix(b"\"").and_then(|s| s.strip_suffix(b"\"")) else {
        return false;
    };
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'\\' => i += 2,
            b'"' => return false,
            b if b < 0x20 => return false,
            _ => i += 1,
        }
    }
    // An escape that swallowed the closing quote ends past the end.
    i == inner.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::acp_bridge::to_acp::chunk_frame;
    use crate::dialect::Dialect;
    use crate::jsonrpc::notification_frame;
    use crate::session::update::{Event, Update};

    fn splice(line: &[u8]) -> Option<Vec<u8>> {
        let mut frame = Vec::new();
        splice_into(line, &mut frame).then_some(frame)
    }

    /// The line the daemon writes, by the daemon's own serializer.
    fn daemon_line(sid: &str, thought: bool, text: &str) -> Vec<u8> {
        let event = if thought {
            Event::ThoughtChunk(text)
        } else {
            Event::MessageChunk(text)
        };
        let update = Update {
            session_id: sid,
            event,
        };
        let mut line = notification_frame("session/update", &update, Dialect::Camel).unwrap();
        assert_eq!(line.pop(), Some(b'\n'));
        line
    }

    #[test]
    fn splices_what_decoding_would_write() {
        let sid = "6f1c2f7e-0c8e-4d8e-9d59-5d8a4c1e2b3a";
        let texts = [
            "x",
            "",
            "quote \" and backslash \\ and \\\" both",
            "tab\tnewline\nnul\u{0}bell\u{7}",
            "ends with a backslash \\",
            "unicode é 漢 🦀 and \u{2028}",
            "}}",
        ];
        for (thought, kind) in [
            (false, "agent_message_chunk"),
            (true, "agent_thought_chunk"),
        ] {
            for text in texts {
                let line = daemon_line(sid, thought, text);
                assert_eq!(
                    splice(&line),
                    Some(chunk_frame(sid, kind, text)),
                    "{}",
                    String::from_utf8_lossy(&line)
                );
            }
        }
    }

    #[test]
    fn leaves_every_other_line_to_decoding() {
        let ok = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":"a"}}"#;
        assert!(splice(ok).is_some());
        let refused: [&[u8]; 9] = [
            // Another kind, another order, another member.
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"user_message_chunk","text":"a"}}"#,
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"type":"agent_message_chunk","sessionId":"s","text":"a"}}"#,
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":"a","seq":1}}"#,
            // An escape in the id.
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\"x","type":"agent_message_chunk","text":"a"}}"#,
            // Text that is not one string.
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":"a","x":"b"}}"#,
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":"a\"}}"#,
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":7}}"#,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"type\":\"agent_message_chunk\",\"text\":\"raw\nbyte\"}}",
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","type":"agent_message_chunk","text":"a"}} "#,
        ];
        for line in refused {
            assert_eq!(splice(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}
