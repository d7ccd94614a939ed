//! Transcript rows and the provider-safe projection (§9.6).
//!
//! The projection is the one function that turns raw visible history into
//! model context: on rebuild, when seeding a resumed Chat session, and after
//! each persisted turn (§10.1), so the in-memory context always equals what a
//! rebuild from storage would produce.

use serde_json::value::RawValue;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::agent::{ContextMessage, Kind, Role};

use super::StoreError;

/// One `acp_transcript` row (or a `chat_messages` row, as `message`).
#[derive(Debug, Clone)]
pub struct TranscriptRow {
    /// The permanent 1-based position in the session.
    pub seq: i64,
    /// `user`, `assistant`, `tool` or `system`.
    pub role: String,
    /// `message`, `tool_call`, `tool_result` or `interruption_marker`.
    pub kind: String,
    /// The text (empty for tool calls).
    pub content: String,
    /// Tool rows: the call id.
    pub tool_call_id: Option<String>,
    /// Tool rows: the tool name.
    pub tool_name: Option<String>,
    /// Tool calls: the input object, compact.
    pub tool_input: Option<Box<RawValue>>,
}

impl PartialEq for TranscriptRow {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
            && self.role == other.role
            && self.kind == other.kind
            && self.content == other.content
            && self.tool_call_id == other.tool_call_id
            && self.tool_name == other.tool_name
            && self.tool_input.as_ref().map(|r| r.get())
                == other.tool_input.as_ref().map(|r| r.get())
    }
}

impl TranscriptRow {
    /// Reads the row from a query selecting
    /// `seq, role, kind, content, tool_call_id, tool_name, tool_input`.
    pub(super) fn from_sql(r: &SqliteRow) -> Result<Self, StoreError> {
        let tool_input: Option<String> = r.try_get("tool_input")?;
        let tool_input = tool_input
            .map(|s| {
                RawValue::from_string(s)
                    .map_err(|e| StoreError::Corrupt(format!("transcript tool_input: {e}")))
            })
            .transpose()?;
        Ok(TranscriptRow {
            seq: r.try_get("seq")?,
            role: r.try_get("role")?,
            kind: r.try_get("kind")?,
            content: r.try_get("content")?,
            tool_call_id: r.try_get("tool_call_id")?,
            tool_name: r.try_get("tool_name")?,
            tool_input,
        })
    }

    fn is(&self, role: &str, kind: &str) -> bool {
        self.role == role && self.kind == kind
    }
}

/// The transcript rows of session `row` with `seq > after`, in order.
pub(super) async fn transcript_after(
    conn: &mut SqliteConnection,
    row: i64,
    after: i64,
) -> Result<Vec<TranscriptRow>, StoreError> {
    let rows = sqlx::query(
        "SELECT seq, role, kind, content, tool_call_id, tool_name, tool_input \
         FROM acp_transcript WHERE session_row = ? AND seq > ? ORDER BY seq",
    )
    .bind(row)
    .bind(after)
    .fetch_all(conn)
    .await?;
    rows.iter().map(TranscriptRow::from_sql).collect()
}

/// The provider-safe projection of a row sequence (§9.6).
///
/// `system` rows are dropped first (so a marker never separates anything);
/// user and assistant messages are kept; a run of consecutive `tool_call`
/// rows keeps only the calls whose result (same `tool_call_id`, first unused
/// match) is in the run of `tool_result` rows right after it, followed by
/// those results in their order; everything else is dropped.
pub fn provider_safe(mut rows: Vec<TranscriptRow>) -> Vec<ContextMessage> {
    kept(&rows)
        .into_iter()
        .map(|(i, role, kind)| {
            let r = &mut rows[i];
            ContextMessage {
                role,
                kind,
                content: std::mem::take(&mut r.content),
                tool_call_id: r.tool_call_id.take(),
                tool_name: r.tool_name.take(),
                tool_input: r.tool_input.take(),
            }
        })
        .collect()
}

/// The rows the projection keeps, in its order, each once, as what.
fn kept(rows: &[TranscriptRow]) -> Vec<(usize, Role, Kind)> {
    let rows: Vec<(usize, &TranscriptRow)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.role != "system")
        .collect();
    let mut out = Vec::with_capacity(rows.len());
    let mut i = 0;
    while i < rows.len() {
        let (at, r) = rows[i];
        if r.is("assistant", "tool_call") {
            let calls_end = run_end(&rows, i, "assistant", "tool_call");
            let results_end = run_end(&rows, calls_end, "tool", "tool_result");
            pair_group(&rows[i..calls_end], &rows[calls_end..results_end], &mut out);
            i = results_end;
            continue;
        }
        if r.is("user", "message") {
            out.push((at, Role::User, Kind::Message));
        } else if r.is("assistant", "message") {
            out.push((at, Role::Assistant, Kind::Message));
        }
        // Anything else (a tool_result not right after calls, a tool
        // message) is not provider-safe.
        i += 1;
    }
    out
}

/// Rows with their positions in the whole sequence.
type Indexed<'a> = (usize, &'a TranscriptRow);

/// The end of the run of `role/kind` rows starting at `from`.
fn run_end(rows: &[Indexed<'_>], from: usize, role: &str, kind: &str) -> usize {
    from + rows[from..]
        .iter()
        .take_while(|(_, r)| r.is(role, kind))
        .count()
}

/// Keeps the calls that have a result in `results`, then those results.
fn pair_group(calls: &[Indexed<'_>], results: &[Indexed<'_>], out: &mut Vec<(usize, Role, Kind)>) {
    let mut used = vec![false; results.len()];
    let mut kept_calls = Vec::new();
    for (at, call) in calls {
        let Some(id) = call.tool_call_id.as_deref() else {
            continue;
        };
        let found = results
            .iter()
            .enumerate()
            .find(|(j, (_, res))| !used[*j] && res.tool_call_id.as_deref() == Some(id));
        if let Some((j, _)) = found {
            used[j] = true;
            kept_calls.push((*at, Role::Assistant, Kind::ToolCall));
        }
    }
    out.extend(kept_calls);
    out.extend(
        results
            .iter()
            .zip(&used)
            .filter(|(_, used)| **used)
            .map(|((at, _), _)| (*at, Role::Tool, Kind::ToolResult)),
    );
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn msg(seq: i64, role: &str, content: &str) -> TranscriptRow {
        let kind = if role == "system" {
            "interruption_marker"
        } else {
            "message"
        };
        TranscriptRow {
            seq,
            role: role.into(),
            kind: kind.into(),
            content: content.into(),
            tool_call_id: None,
            tool_name: None,
            tool_input: None,
        }
    }

    pub(crate) fn call(seq: i64, id: &str) -> TranscriptRow {
        TranscriptRow {
            seq,
            role: "assistant".into(),
            kind: "tool_call".into(),
            content: String::new(),
            tool_call_id: Some(id.into()),
            tool_name: Some("echo".into()),
            tool_input: Some(RawValue::from_string(format!("{{\"id\":\"{id}\"}}")).unwrap()),
        }
    }

    pub(crate) fn result(seq: i64, id: &str, output: &str) -> TranscriptRow {
        TranscriptRow {
            seq,
            role: "tool".into(),
            kind: "tool_result".into(),
            content: output.into(),
            tool_call_id: Some(id.into()),
            tool_name: Some("echo".into()),
            tool_input: None,
        }
    }

    /// `role/kind:content[#id]` per message, for compact assertions.
    pub(crate) fn shape(ctx: &[ContextMessage]) -> Vec<String> {
        ctx.iter()
            .map(|m| {
                let v = serde_json::to_value(m).unwrap();
                let mut s = format!("{}/{}:{}", v["role"], v["kind"], m.content).replace('"', "");
                if let Some(id) = &m.tool_call_id {
                    s.push('#');
                    s.push_str(id);
                }
                s
            })
            .collect()
    }

    #[test]
    fn drops_system_rows_and_keeps_messages() {
        let rows = [
            msg(1, "user", "hi"),
            msg(2, "assistant", "hello"),
            msg(3, "system", "Turn interrupted"),
            msg(4, "user", "again"),
        ];
        assert_eq!(
            shape(&provider_safe(rows.to_vec())),
            [
                "user/message:hi",
                "assistant/message:hello",
                "user/message:again"
            ]
        );
    }

    #[test]
    fn pairs_calls_with_the_results_right_after_them() {
        let rows = [
            msg(1, "user", "go"),
            call(2, "a"),
            call(3, "b"),
            call(4, "c"),
            result(5, "c", "C"),
            result(6, "a", "A"),
            result(7, "z", "Z"),
            msg(8, "assistant", "done"),
        ];
        assert_eq!(
            shape(&provider_safe(rows.to_vec())),
            [
                "user/message:go",
                "assistant/tool_call:#a",
                "assistant/tool_call:#c",
                "tool/tool_result:C#c",
                "tool/tool_result:A#a",
                "assistant/message:done",
            ]
        );
        let ctx = provider_safe(rows.to_vec());
        assert_eq!(ctx[1].tool_input.as_ref().unwrap().get(), r#"{"id":"a"}"#);
        assert_eq!(ctx[1].tool_name.as_deref(), Some("echo"));
    }

    #[test]
    fn unpaired_calls_and_stray_results_are_dropped() {
        let rows = [
            msg(1, "user", "go"),
            result(2, "a", "early"),
            call(3, "a"),
            msg(4, "system", "Turn interrupted"),
            msg(5, "user", "next"),
            result(6, "a", "late"),
            call(7, "b"),
        ];
        assert_eq!(
            shape(&provider_safe(rows.to_vec())),
            ["user/message:go", "user/message:next"]
        );
    }

    #[test]
    fn a_result_pairs_once_and_first_match_wins() {
        let rows = [
            call(1, "a"),
            call(2, "a"),
            result(3, "a", "first"),
            result(4, "b", "other"),
        ];
        assert_eq!(
            shape(&provider_safe(rows.to_vec())),
            ["assistant/tool_call:#a", "tool/tool_result:first#a"]
        );
        let rows = [call(1, "a"), result(2, "a", "one"), result(3, "a", "two")];
        assert_eq!(
            shape(&provider_safe(rows.to_vec())),
            ["assistant/tool_call:#a", "tool/tool_result:one#a"]
        );
    }

    #[test]
    fn consecutive_groups_pair_separately_and_markers_do_not_split_them() {
        let rows = [
            call(1, "a"),
            result(2, "a", "A"),
            call(3, "b"),
            msg(4, "system", "x"),
            result(5, "b", "B"),
            result(6, "a", "A again"),
        ];
        assert_eq!(
            shape(&provider_safe(rows.to_vec())),
            [
                "assistant/tool_call:#a",
                "tool/tool_result:A#a",
                "assistant/tool_call:#b",
                "tool/tool_result:B#b",
            ]
        );
    }
}
