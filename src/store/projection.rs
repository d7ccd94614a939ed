//! Transcript rows and the provider-safe projection (§9.6).
//!
//! A row is its `seq` and a [`ContextMessage`]: the one message type, whose
//! `system` role and `interruption_marker` kind only rows carry. The
//! projection is the one function that turns raw visible history into model
//! context: on rebuild, when seeding a resumed Chat session, and after each
//! persisted turn (§10.1), so the in-memory context always equals what a
//! rebuild from storage would produce. It drops every `system` row, so the
//! model never sees a marker.

use serde_json::value::RawValue;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use crate::agent::{ContextMessage, Kind, Role};

use super::StoreError;

/// One `acp_transcript` row (or a `chat_messages` row, as `message`).
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptRow {
    /// The permanent 1-based position in the session.
    pub seq: i64,
    /// The message; `tool_input` is stored compact.
    pub message: ContextMessage,
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
        // The tables' CHECK constraints hold the columns to these words.
        let role: &str = r.try_get("role")?;
        let role = Role::parse(role)
            .ok_or_else(|| StoreError::Corrupt(format!("transcript role {role:?}")))?;
        let kind: &str = r.try_get("kind")?;
        let kind = Kind::parse(kind)
            .ok_or_else(|| StoreError::Corrupt(format!("transcript kind {kind:?}")))?;
        Ok(TranscriptRow {
            seq: r.try_get("seq")?,
            message: ContextMessage {
                role,
                kind,
                content: r.try_get("content")?,
                tool_call_id: r.try_get("tool_call_id")?,
                tool_name: r.try_get("tool_name")?,
                tool_input,
            },
        })
    }

    fn is(&self, role: Role, kind: Kind) -> bool {
        self.message.role == role && self.message.kind == kind
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
/// those results in their order; everything else is dropped. What is kept
/// stays in row order (a group's calls all precede its results).
pub fn provider_safe(rows: Vec<TranscriptRow>) -> Vec<ContextMessage> {
    let keep = kept(&rows);
    rows.into_iter()
        .zip(keep)
        .filter_map(|(r, keep)| keep.then_some(r.message))
        .collect()
}

/// Which rows the projection keeps.
fn kept(rows: &[TranscriptRow]) -> Vec<bool> {
    let mut keep = vec![false; rows.len()];
    let rows: Vec<Indexed<'_>> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.message.role != Role::System)
        .collect();
    let mut i = 0;
    while i < rows.len() {
        let (at, r) = rows[i];
        if r.is(Role::Assistant, Kind::ToolCall) {
            let calls_end = run_end(&rows, i, Role::Assistant, Kind::ToolCall);
            let results_end = run_end(&rows, calls_end, Role::Tool, Kind::ToolResult);
            pair_group(
                &rows[i..calls_end],
                &rows[calls_end..results_end],
                &mut keep,
            );
            i = results_end;
            continue;
        }
        if r.is(Role::User, Kind::Message) || r.is(Role::Assistant, Kind::Message) {
            keep[at] = true;
        }
        // Anything else (a tool_result not right after calls, a tool
        // message) is not provider-safe.
        i += 1;
    }
    keep
}

/// Rows with their positions in the whole sequence.
type Indexed<'a> = (usize, &'a TranscriptRow);

/// The end of the run of `role/kind` rows starting at `from`.
fn run_end(rows: &[Indexed<'_>], from: usize, role: Role, kind: Kind) -> usize {
    from + rows[from..]
        .iter()
        .take_while(|(_, r)| r.is(role, kind))
        .count()
}

/// Keeps the calls that have a result in `results`, and those results.
fn pair_group(calls: &[Indexed<'_>], results: &[Indexed<'_>], keep: &mut [bool]) {
    let mut used = vec![false; results.len()];
    for (at, call) in calls {
        let Some(id) = call.message.tool_call_id.as_deref() else {
            continue;
        };
        let found = results
            .iter()
            .enumerate()
            .find(|(j, (_, res))| !used[*j] && res.message.tool_call_id.as_deref() == Some(id));
        if let Some((j, _)) = found {
            used[j] = true;
            keep[*at] = true;
        }
    }
    for ((at, _), used) in results.iter().zip(used) {
        keep[*at] |= used;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn msg(seq: i64, role: &str, content: &str) -> TranscriptRow {
        let kind = if role == "system" {
            Kind::InterruptionMarker
        } else {
            Kind::Message
        };
        TranscriptRow {
            seq,
            message: ContextMessage {
                kind,
                ..ContextMessage::text(Role::parse(role).unwrap(), content)
            },
        }
    }

    pub(crate) fn call(seq: i64, id: &str) -> TranscriptRow {
        TranscriptRow {
            seq,
            message: ContextMessage {
                role: Role::Assistant,
                kind: Kind::ToolCall,
                content: String::new(),
                tool_call_id: Some(id.into()),
                tool_name: Some("echo".into()),
                tool_input: Some(RawValue::from_string(format!("{{\"id\":\"{id}\"}}")).unwrap()),
            },
        }
    }

    pub(crate) fn result(seq: i64, id: &str, output: &str) -> TranscriptRow {
        TranscriptRow {
            seq,
            message: ContextMessage {
                role: Role::Tool,
                kind: Kind::ToolResult,
                content: output.into(),
                tool_call_id: Some(id.into()),
                tool_name: Some("echo".into()),
                tool_input: None,
            },
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
