//! Assembly of streamed `tool_calls` deltas into whole calls.
//!
//! A server sends each call as a first delta with its `index`, `id` and
//! `function.name`, then deltas carrying pieces of `function.arguments`
//! under the same `index`; calls may interleave. Servers that omit `index`
//! (some llama.cpp builds) are read by the delta's position in its array.

use serde::Deserialize;

/// One element of `choices[0].delta.tool_calls`.
#[derive(Debug, Default, Deserialize)]
pub struct ToolCallDelta {
    /// Which call this piece belongs to.
    #[serde(default)]
    pub index: Option<u32>,
    /// Sent with the first piece.
    #[serde(default)]
    pub id: Option<String>,
    /// The function's name and a piece of its arguments.
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

/// `function` of a [`ToolCallDelta`].
#[derive(Debug, Default, Deserialize)]
pub struct FunctionDelta {
    /// Sent with the first piece (some servers repeat it).
    #[serde(default)]
    pub name: Option<String>,
    /// A piece of the JSON arguments text.
    #[serde(default)]
    pub arguments: Option<String>,
}

/// A whole tool call as the model asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssembledCall {
    /// The server's id (possibly empty: the turn then names it).
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments text, as sent (not yet parsed).
    pub arguments: String,
}

/// Calls under assembly, in order of first appearance of their index.
#[derive(Debug, Default)]
pub struct Calls {
    calls: Vec<(u32, AssembledCall)>,
}

/// A model may not ask for more calls than this in one answer.
pub const MAX_CALLS_PER_ANSWER: usize = 64;
/// Bound on one call's arguments text (a write_file of a large file).
pub const MAX_ARGUMENTS_BYTES: usize = 4 * 1024 * 1024;

impl Calls {
    /// Adds the deltas of one chunk. Fails (a protocol error) past the
    /// bounds above, so a runaway stream cannot grow without limit.
    pub fn add(&mut self, deltas: Vec<ToolCallDelta>) -> Result<(), String> {
        for (position, d) in deltas.into_iter().enumerate() {
            let index = d.index.unwrap_or(position as u32);
            let slot = match self.calls.iter().position(|(i, _)| *i == index) {
                Some(slot) => slot,
                None => {
                    if self.calls.len() >= MAX_CALLS_PER_ANSWER {
                        return Err(format!("more than {MAX_CALLS_PER_ANSWER} tool calls"));
                    }
                    self.calls.push((
                        index,
                        AssembledCall {
                            id: String::new(),
                            name: String::new(),
                            arguments: String::new(),
                        },
                    ));
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[slot].1;
            if let Some(id) = d.id.filter(|id| !id.is_empty()) {
                call.id = id;
            }
            if let Some(f) = d.function {
                // A repeated name is the same name, not a suffix.
                if let Some(name) = f.name.filter(|n| !n.is_empty()) {
                    if call.name != name {
                        call.name.push_str(&name);
                    }
                }
                if let Some(piece) = f.arguments {
                    if call.arguments.len() + piece.len() > MAX_ARGUMENTS_BYTES {
                        return Err(format!(
                            "tool call arguments exceed {MAX_ARGUMENTS_BYTES} bytes"
                        ));
                    }
                    call.arguments.push_str(&piece);
                }
            }
        }
        Ok(())
    }

    /// The calls in order of their index.
    pub fn finish(mut self) -> Vec<AssembledCall> {
        self.calls.sort_by_key(|(i, _)| *i);
        self.calls.into_iter().map(|(_, c)| c).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deltas(json: &str) -> Vec<ToolCallDelta> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn split_arguments_and_interleaved_indices() {
        let mut calls = Calls::default();
        calls
            .add(deltas(r#"[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]"#))
            .unwrap();
        calls
            .add(deltas(r#"[{"index":1,"id":"call_b","type":"function","function":{"name":"list_dir","arguments":"{\"pa"}}]"#))
            .unwrap();
        calls
            .add(deltas(
                r#"[{"index":0,"function":{"arguments":"{\"path\":"}}]"#,
            ))
            .unwrap();
        calls
            .add(deltas(r#"[{"index":1,"function":{"arguments":"th\":\".\"}"}},{"index":0,"function":{"arguments":"\"a.txt\"}"}}]"#))
            .unwrap();
        let got = calls.finish();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            AssembledCall {
                id: "call_a".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.txt"}"#.into()
            }
        );
        assert_eq!(got[1].id, "call_b");
        assert_eq!(got[1].arguments, r#"{"path":"."}"#);
    }

    #[test]
    fn missing_index_is_the_position_and_repeated_name_is_kept_once() {
        let mut calls = Calls::default();
        calls
            .add(deltas(r#"[{"id":"x","function":{"name":"shell","arguments":"{}"}},{"id":"y","function":{"name":"list_dir"}}]"#))
            .unwrap();
        calls
            .add(deltas(r#"[{"index":0,"function":{"name":"shell"}}]"#))
            .unwrap();
        let got = calls.finish();
        assert_eq!(got[0].name, "shell");
        assert_eq!(got[1].name, "list_dir");
        assert_eq!(got[1].arguments, "");
    }

    #[test]
    fn too_many_calls_is_an_error() {
        let mut calls = Calls::default();
        let many: Vec<_> = (0..=MAX_CALLS_PER_ANSWER as u32)
            .map(|i| ToolCallDelta {
                index: Some(i),
                ..ToolCallDelta::default()
            })
            .collect();
        assert!(calls.add(many).is_err());
    }
}
