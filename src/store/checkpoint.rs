//! Turn checkpoints (§9.3): begin, append, finalize, and the folding of a
//! checkpoint into transcript rows that finalize, recovery and kill share.
//!
//! A checkpoint is one `acp_turn_checkpoints` row plus its events in
//! insertion (`id`) order. Each event's payload is a small JSON object:
//! `{"kind":"user","text":…}` (written by [`Store::turn_begin`]),
//! `{"kind":"text","text":…}`, `{"kind":"tool_call","id":…,"name":…,"input":…}`
//! and `{"kind":"tool_result","id":…,"name":…,"output":…}`. Tool outputs are
//! bounded at 16 KiB when stored, so a checkpoint never holds more than the
//! transcript will.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sqlx::SqliteConnection;

use crate::agent::compact_json;
use crate::faults::FaultPoint;

use super::projection::TranscriptRow;
use super::{bound_text, utc_now, Store, StoreError, TRUNCATION_SUFFIX};

/// Tool outputs are persisted bounded at this many bytes (§9.3).
pub const TOOL_OUTPUT_MAX: usize = 16 * 1024;

/// One visible event of a running turn, appended before its notification.
#[derive(Debug, Clone)]
pub enum CheckpointEvent {
    /// An `agent_message_chunk`.
    Text(String),
    /// A tool call.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The input object as the client wrote it (stored compact).
        input: Box<RawValue>,
    },
    /// A tool result (stored bounded at [`TOOL_OUTPUT_MAX`]).
    ToolResult {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The output text.
        output: String,
    },
}

/// The stored payload, written and read as a flat object (an internally
/// tagged enum cannot carry a `RawValue` through deserialization).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Payload<'a> {
    kind: &'a str,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<String>,
}

impl Payload<'_> {
    fn user(text: &str) -> Result<String, StoreError> {
        let p = Payload {
            kind: "user",
            text: Some(text.to_owned()),
            ..Payload::default()
        };
        to_json(&p)
    }

    fn event(event: &CheckpointEvent) -> Result<String, StoreError> {
        let p = match event {
            CheckpointEvent::Text(text) => Payload {
                kind: "text",
                text: Some(text.clone()),
                ..Payload::default()
            },
            CheckpointEvent::ToolCall { id, name, input } => Payload {
                kind: "tool_call",
                id: Some(id.clone()),
                name: Some(name.clone()),
                input: Some(compact_input(input)?),
                ..Payload::default()
            },
            CheckpointEvent::ToolResult { id, name, output } => Payload {
                kind: "tool_result",
                id: Some(id.clone()),
                name: Some(name.clone()),
                output: Some(bound_text(output, TOOL_OUTPUT_MAX).into_owned()),
                ..Payload::default()
            },
        };
        to_json(&p)
    }
}

fn to_json(p: &Payload<'_>) -> Result<String, StoreError> {
    serde_json::to_string(p).map_err(|e| StoreError::Corrupt(format!("event payload: {e}")))
}

fn compact_input(input: &RawValue) -> Result<Box<RawValue>, StoreError> {
    RawValue::from_string(compact_json(input.get()).into_owned())
        .map_err(|e| StoreError::Corrupt(format!("tool input: {e}")))
}

impl Store {
    /// Opens a turn (fault point `turn_begin`): in one transaction, the
    /// checkpoint row and the user prompt as its first event; the session's
    /// `last_activity` moves to now. Fails with [`StoreError::State`] when a
    /// checkpoint is still open (recover it first) or the row is killed.
    pub async fn turn_begin(
        &self,
        row: i64,
        turn_id: &str,
        prompt: &str,
    ) -> Result<(), StoreError> {
        self.check(FaultPoint::TurnBegin)?;
        let payload = Payload::user(prompt)?;
        let now = utc_now();
        let mut tx = self.write_tx().await?;
        let killed: Option<Option<String>> =
            sqlx::query_scalar("SELECT killed_at FROM acp_sessions WHERE id = ?")
                .bind(row)
                .fetch_optional(&mut *tx)
                .await?;
        match killed {
            None => return Err(StoreError::NotFound("acp session row")),
            Some(Some(_)) => return Err(StoreError::State("session is killed")),
            Some(None) => {}
        }
        if checkpoint_turn(&mut tx, row).await?.is_some() {
            return Err(StoreError::State("a turn checkpoint is already open"));
        }
        sqlx::query(
            "INSERT INTO acp_turn_checkpoints (session_row, turn_id, started_at) VALUES (?, ?, ?)",
        )
        .bind(row)
        .bind(turn_id)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        sqlx::query("INSERT INTO acp_checkpoint_events (session_row, payload) VALUES (?, ?)")
            .bind(row)
            .bind(payload)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE acp_sessions SET last_activity = ? WHERE id = ?")
            .bind(&now)
            .bind(row)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Appends events to the open checkpoint (fault point
    /// `checkpoint_append`), all in one transaction: either every event is
    /// durable or none is. Fails with [`StoreError::State`] when no
    /// checkpoint is open.
    pub async fn checkpoint_append(
        &self,
        row: i64,
        events: &[CheckpointEvent],
    ) -> Result<(), StoreError> {
        self.check(FaultPoint::CheckpointAppend)?;
        let payloads = events
            .iter()
            .map(Payload::event)
            .collect::<Result<Vec<_>, _>>()?;
        let mut tx = self.write_tx().await?;
        if checkpoint_turn(&mut tx, row).await?.is_none() {
            return Err(StoreError::State("no open turn checkpoint"));
        }
        // One statement for the whole batch (the payloads as one JSON array
        // of strings, inserted in array order): a round trip to SQLite's
        // worker thread per event would dominate the cost of a batch.
        let batch = serde_json::to_string(&payloads)
            .map_err(|e| StoreError::Corrupt(format!("event batch: {e}")))?;
        sqlx::query(
            "INSERT INTO acp_checkpoint_events (session_row, payload) \
             SELECT ?, value FROM json_each(?) ORDER BY key",
        )
        .bind(row)
        .bind(batch)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Finalizes the open turn (fault point `turn_finalize`): in one
    /// transaction, folds its events into transcript rows, adds the marker
    /// `Turn failed: <failure>` when the agent failed, deletes the checkpoint
    /// and moves `last_activity` to now. Returns the rows appended, marker
    /// included. Fails with [`StoreError::State`] when no checkpoint is open.
    pub async fn turn_finalize(
        &self,
        row: i64,
        failure: Option<&str>,
    ) -> Result<Vec<TranscriptRow>, StoreError> {
        self.check(FaultPoint::TurnFinalize)?;
        let marker = failure.map(|m| format!("Turn failed: {m}"));
        let mut tx = self.write_tx().await?;
        let rows = fold_checkpoint(&mut tx, row, marker.as_deref())
            .await?
            .ok_or(StoreError::State("no open turn checkpoint"))?;
        sqlx::query("UPDATE acp_sessions SET last_activity = ? WHERE id = ?")
            .bind(utc_now())
            .bind(row)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(rows)
    }

    /// Whether the session has an open (or leftover) checkpoint.
    pub async fn has_checkpoint(&self, row: i64) -> Result<bool, StoreError> {
        let mut conn = self.pool.acquire().await?;
        Ok(checkpoint_turn(&mut conn, row).await?.is_some())
    }
}

/// The open checkpoint's turn id.
async fn checkpoint_turn(
    conn: &mut SqliteConnection,
    row: i64,
) -> Result<Option<String>, StoreError> {
    Ok(
        sqlx::query_scalar("SELECT turn_id FROM acp_turn_checkpoints WHERE session_row = ?")
            .bind(row)
            .fetch_optional(conn)
            .await?,
    )
}

/// The checkpoint's payloads, in order.
pub(super) async fn checkpoint_payloads(
    conn: &mut SqliteConnection,
    row: i64,
) -> Result<Vec<String>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT payload FROM acp_checkpoint_events WHERE session_row = ? ORDER BY id",
    )
    .bind(row)
    .fetch_all(conn)
    .await?)
}

/// Folds session `row`'s checkpoint into transcript rows with the next seqs,
/// appends a `system/interruption_marker` row when `marker` is given, and
/// deletes the checkpoint. `None` when there is no checkpoint (nothing
/// changed). Runs inside the caller's transaction.
pub(super) async fn fold_checkpoint(
    conn: &mut SqliteConnection,
    row: i64,
    marker: Option<&str>,
) -> Result<Option<Vec<TranscriptRow>>, StoreError> {
    let Some(turn_id) = checkpoint_turn(conn, row).await? else {
        return Ok(None);
    };
    let last: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(seq), 0) FROM acp_transcript WHERE session_row = ?",
    )
    .bind(row)
    .fetch_one(&mut *conn)
    .await?;
    let payloads = checkpoint_payloads(conn, row).await?;
    let mut rows = fold_events(&payloads, last + 1);
    if let Some(marker) = marker {
        let seq = rows.last().map_or(last, |r| r.seq) + 1;
        rows.push(TranscriptRow {
            seq,
            role: "system".into(),
            kind: "interruption_marker".into(),
            content: marker.to_owned(),
            tool_call_id: None,
            tool_name: None,
            tool_input: None,
        });
    }
    let now = utc_now();
    for r in &rows {
        sqlx::query(
            "INSERT INTO acp_transcript (session_row, seq, turn_id, role, kind, content, \
             tool_call_id, tool_name, tool_input, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(row)
        .bind(r.seq)
        .bind(&turn_id)
        .bind(&r.role)
        .bind(&r.kind)
        .bind(&r.content)
        .bind(&r.tool_call_id)
        .bind(&r.tool_name)
        .bind(r.tool_input.as_ref().map(|i| i.get()))
        .bind(&now)
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query("DELETE FROM acp_checkpoint_events WHERE session_row = ?")
        .bind(row)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM acp_turn_checkpoints WHERE session_row = ?")
        .bind(row)
        .execute(&mut *conn)
        .await?;
    Ok(Some(rows))
}

/// The §9.3 folding: the prompt is one `user/message` row, a run of
/// consecutive `text` events one `assistant/message` row (an empty run
/// writes nothing), each tool call and result one row. An unreadable
/// payload is skipped with a warning, so one bad event never makes the
/// rest of the turn unrecoverable.
fn fold_events(payloads: &[String], first_seq: i64) -> Vec<TranscriptRow> {
    let mut rows: Vec<TranscriptRow> = Vec::with_capacity(payloads.len());
    let mut text = String::new();
    let mut seq = first_seq;
    let mut push = |rows: &mut Vec<TranscriptRow>, r: TranscriptRow| {
        rows.push(TranscriptRow { seq, ..r });
        seq += 1;
    };
    let row = |role: &str, kind: &str, content: String| TranscriptRow {
        seq: 0,
        role: role.into(),
        kind: kind.into(),
        content,
        tool_call_id: None,
        tool_name: None,
        tool_input: None,
    };
    for raw in payloads {
        let p: Payload<'_> = match serde_json::from_str(raw) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "skipping unreadable checkpoint event");
                continue;
            }
        };
        if p.kind == "text" {
            text.push_str(p.text.as_deref().unwrap_or_default());
            continue;
        }
        if !text.is_empty() {
            push(
                &mut rows,
                row("assistant", "message", std::mem::take(&mut text)),
            );
        }
        match p.kind {
            "user" => push(
                &mut rows,
                row("user", "message", p.text.unwrap_or_default()),
            ),
            "tool_call" => push(
                &mut rows,
                TranscriptRow {
                    tool_call_id: p.id,
                    tool_name: p.name,
                    tool_input: p.input,
                    ..row("assistant", "tool_call", String::new())
                },
            ),
            "tool_result" => {
                let output = p.output.unwrap_or_default();
                // Stored outputs are already bounded; bounding again would
                // cut the suffix of a bounded one.
                let output = if output.len() > TOOL_OUTPUT_MAX + TRUNCATION_SUFFIX.len() {
                    bound_text(&output, TOOL_OUTPUT_MAX).into_owned()
                } else {
                    output
                };
                push(
                    &mut rows,
                    TranscriptRow {
                        tool_call_id: p.id,
                        tool_name: p.name,
                        ..row("tool", "tool_result", output)
                    },
                );
            }
            other => tracing::warn!(kind = other, "skipping checkpoint event of unknown kind"),
        }
    }
    if !text.is_empty() {
        push(&mut rows, row("assistant", "message", text));
    }
    rows
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
pub(super) mod tests;
