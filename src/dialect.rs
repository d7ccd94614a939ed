//! The wire dialects (§3.8): the one serializer that decides member names.
//!
//! Handlers serialize their camelCase structs through [`write_json`]; on a
//! `snake` connection the formatter rewrites every object *key* it writes
//! from camelCase to snake_case. Keys inside raw JSON (a tool's `rawInput`,
//! written as a [`serde_json::value::RawValue`]) are written verbatim, so a
//! client's own data is never renamed.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// The member-name dialect of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// camelCase members: the seed's form and the default.
    #[default]
    Camel,
    /// snake_case members: ZeroClaw's shipped clients.
    Snake,
}

impl Dialect {
    /// Encoding for an atomic cell.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// Decoding from an atomic cell.
    pub fn from_u8(v: u8) -> Self {
        if v == Dialect::Snake as u8 {
            Dialect::Snake
        } else {
            Dialect::Camel
        }
    }
}

/// Serializes `value` as compact JSON into `out`, with member names in `dialect`.
pub fn write_json<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
    dialect: Dialect,
) -> serde_json::Result<()> {
    match dialect {
        Dialect::Camel => value.serialize(&mut serde_json::Serializer::new(out)),
        Dialect::Snake => value.serialize(&mut serde_json::Serializer::with_formatter(
            out,
            SnakeKeys { in_key: false },
        )),
    }
}

/// Compact formatting, with object keys converted to snake_case.
struct SnakeKeys {
    in_key: bool,
}

impl Formatter for SnakeKeys {
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.in_key = true;
        CompactFormatter.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.in_key = false;
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if !self.in_key || !fragment.bytes().any(|b| b.is_ascii_uppercase()) {
            return writer.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, b) in fragment.bytes().enumerate() {
            if b.is_ascii_uppercase() {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                if i > 0 {
                    writer.write_all(b"_")?;
                }
                writer.write_all(&[b.to_ascii_lowercase()])?;
                start = i + 1;
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Update<'a> {
        session_id: &'a str,
        tool_call_id: &'a str,
        raw_input: &'a RawValue,
        max_frame_bytes: u64,
    }

    #[test]
    fn snake_renames_keys_but_not_values_or_raw_json() {
        let raw = RawValue::from_string(r#"{"someKey":"someValue"}"#.into()).unwrap();
        let v = Update {
            session_id: "sessionId",
            tool_call_id: "tc_1",
            raw_input: &raw,
            max_frame_bytes: 1,
        };
        let mut camel = Vec::new();
        write_json(&mut camel, &v, Dialect::Camel).unwrap();
        assert_eq!(
            String::from_utf8(camel).unwrap(),
            r#"{"sessionId":"sessionId","toolCallId":"tc_1","rawInput":{"someKey":"someValue"},"maxFrameBytes":1}"#
        );
        let mut snake = Vec::new();
        write_json(&mut snake, &v, Dialect::Snake).unwrap();
        assert_eq!(
            String::from_utf8(snake).unwrap(),
            r#"{"session_id":"sessionId","tool_call_id":"tc_1","raw_input":{"someKey":"someValue"},"max_frame_bytes":1}"#
        );
    }
}
