//! Turn checkpoints (§9.3): begin, append and finalize; the folding of a
//! checkpoint into transcript rows (shared with recovery and kill) is `fold.rs`.
//!
//! A checkpoint is one `acp_turn_checkpoints` row plus its events in
//! insertion (`id`) order; the consecutive text events of one append are
//! stored as one text event (they fold into the same row either way, see
//! `batch_json`). Each event's payload is a small JSON object:
//! `{"kind":"user","text":…}` (written by [`Store::turn_begin`]),
//! `{"kind":"text","text":…}`, `{"kind":"tool_call","id":…,"name":…,"input":…}`
//! and `{"kind":"tool_result","id":…,"name":…,"output":…}`. Tool outputs are
//! bounded at 16 KiB when stored, so a checkpoint never holds more than the
//! transcript will.

use serde::Serialize;
use serde_json::value::RawValue;
use sqlx::SqliteConnection;

use crate::agent::compact_json;
use crate::faults::FaultPoint;

use super::fold::{fold_checkpoint, Touch};
use super::projection::TranscriptRow;
use super::{bound_text, touched, utc_now, Store, StoreError};
use crate::limits::TOOL_OUTPUT_MAX;

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

/// The stored payload as it is written: the same object, borrowing from the
/// event so that serializing copies nothing but the JSON text.
#[derive(Debug, Default, Serialize)]
struct PayloadOut<'a> {
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a str>,
}

impl PayloadOut<'_> {
    fn user(text: &str) -> Result<String, StoreError> {
        let p = PayloadOut {
            kind: "user",
            text: Some(text),
            ..PayloadOut::default()
        };
        serde_json::to_string(&p).map_err(payload_error)
    }

    /// Appends `event`'s payload to `out`.
    fn write_event(out: &mut Vec<u8>, event: &CheckpointEvent) -> Result<(), StoreError> {
        let (input, output);
        let p = match event {
            CheckpointEvent::Text(text) => PayloadOut {
                kind: "text",
                text: Some(text),
                ..PayloadOut::default()
            },
            CheckpointEvent::ToolCall {
                id,
                name,
                input: raw,
            } => {
                input = compact_input(raw)?;
                PayloadOut {
                    kind: "tool_call",
                    id: Some(id),
                    name: Some(name),
                    input: Some(&input),
                    ..PayloadOut::default()
                }
            }
            CheckpointEvent::ToolResult {
                id,
                name,
                output: text,
            } => {
                output = bound_text(text, TOOL_OUTPUT_MAX);
                PayloadOut {
                    kind: "tool_result",
                    id: Some(id),
                    name: Some(name),
                    output: Some(&output),
                    ..PayloadOut::default()
                }
            }
        };
        serde_json::to_writer(out, &p).map_err(payload_error)
    }
}

/// A batch of events as one JSON array of payload strings, in order, with
/// each run of consecutive text events stored as one text event holding
/// their concatenation.
///
/// The fold (§9.3) turns a run of consecutive text events into one
/// `assistant/message` row whatever the run's split into events, so a merged
/// run folds into exactly the rows the separate events would. Storing one
/// row per run instead of one per chunk is what keeps a durable turn's cost
/// near a plain one's: a turn of 10,000 one-character chunks committed 512
/// at a time writes, reads back and deletes 20 event rows instead of 10,000.
fn batch_json(events: &[CheckpointEvent]) -> Result<String, StoreError> {
    let mut payload = Vec::with_capacity(64);
    let mut batch = Vec::with_capacity(events.len() * 4 + 64);
    let mut run = String::new();
    batch.push(b'[');
    let mut rest = events;
    while let Some(first) = rest.first() {
        if batch.len() > 1 {
            batch.push(b',');
        }
        payload.clear();
        let texts = rest
            .iter()
            .take_while(|e| matches!(e, CheckpointEvent::Text(_)))
            .count();
        if texts > 1 {
            run.clear();
            for e in &rest[..texts] {
                if let CheckpointEvent::Text(t) = e {
                    run.push_str(t);
                }
            }
            let p = PayloadOut {
                kind: "text",
                text: Some(&run),
                ..PayloadOut::default()
            };
            serde_json::to_writer(&mut payload, &p).map_err(payload_error)?;
            rest = &rest[texts..];
        } else {
            PayloadOut::write_event(&mut payload, first)?;
            rest = &rest[1..];
        }
        let text = std::str::from_utf8(&payload)
            .map_err(|e| StoreError::Corrupt(format!("event payload: {e}")))?;
        serde_json::to_writer(&mut batch, text).map_err(payload_error)?;
    }
    batch.push(b']');
    String::from_utf8(batch).map_err(|e| StoreError::Corrupt(format!("event batch: {e}")))
}

fn payload_error(e: serde_json::Error) -> StoreError {
    StoreError::Corrupt(format!("event payload: {e}"))
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
        let payload = PayloadOut::user(prompt)?;
        let now = utc_now();
        let mut tx = self.write_tx().await?;
        // The three writes in one round trip to the driver's worker, each
        // conditional, so that together they affect 3 rows only when the
        // row exists, is not killed and has no checkpoint; otherwise the
        // transaction is dropped (rolled back) and the cause looked up.
        let done = sqlx::query(
            "INSERT INTO acp_turn_checkpoints (session_row, turn_id, started_at) \
               SELECT id, ?1, ?2 FROM acp_sessions \
               WHERE id = ?3 AND killed_at IS NULL \
               AND NOT EXISTS (SELECT 1 FROM acp_turn_checkpoints WHERE session_row = ?3); \
             INSERT INTO acp_checkpoint_events (session_row, payload) \
               SELECT session_row, ?4 FROM acp_turn_checkpoints \
               WHERE session_row = ?3 AND turn_id = ?1; \
             UPDATE acp_sessions SET last_activity = ?2 \
               WHERE id = ?3 AND EXISTS (SELECT 1 FROM acp_turn_checkpoints \
               WHERE session_row = ?3 AND turn_id = ?1)",
        )
        .bind(turn_id)
        .bind(&now)
        .bind(row)
        .bind(payload)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 3 {
            tx.commit().await?;
            return Ok(());
        }
        let killed: Option<Option<String>> =
            sqlx::query_scalar("SELECT killed_at FROM acp_sessions WHERE id = ?")
                .bind(row)
                .fetch_optional(&mut *tx)
                .await?;
        Err(match killed {
            None => StoreError::NotFound("acp session row"),
            Some(Some(_)) => StoreError::State("session is killed"),
            Some(None) => StoreError::State("a turn checkpoint is already open"),
        })
    }

    /// Appends events to the open checkpoint (fault point
    /// `checkpoint_append`), atomically: either every event is durable or
    /// none is. Consecutive text events of the batch are stored as one (see
    /// [`batch_json`]). Fails with [`StoreError::State`] when no checkpoint
    /// is open.
    pub async fn checkpoint_append(
        &self,
        row: i64,
        events: &[CheckpointEvent],
    ) -> Result<(), StoreError> {
        self.check(FaultPoint::CheckpointAppend)?;
        if events.is_empty() {
            return if self.has_checkpoint(row).await? {
                Ok(())
            } else {
                Err(StoreError::State("no open turn checkpoint"))
            };
        }
        let batch = batch_json(events)?;
        // One statement for the whole batch, and no explicit transaction: a
        // single statement is atomic on its own and takes the write lock when
        // it starts (as `BEGIN IMMEDIATE` would). Every statement is a round
        // trip to the driver's SQLite worker thread, and those round trips
        // dominated the cost of a batch. The payloads arrive as one JSON array
        // of strings, inserted in array order, and only if the checkpoint row
        // exists: nothing inserted means no open checkpoint.
        let done = sqlx::query(
            "INSERT INTO acp_checkpoint_events (session_row, payload) \
             SELECT c.session_row, j.value \
             FROM acp_turn_checkpoints AS c, json_each(?) AS j \
             WHERE c.session_row = ? ORDER BY j.key",
        )
        .bind(batch)
        .bind(row)
        .execute(&self.pool)
        .await?;
        touched(
            done.rows_affected(),
            StoreError::State("no open turn checkpoint"),
        )
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
        let rows = fold_checkpoint(&mut tx, row, marker.as_deref(), Touch::Yes)
            .await?
            .ok_or(StoreError::State("no open turn checkpoint"))?;
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

/// The checkpoint's payloads, in order, one row each (tests only: the fold
/// reads them back in blocks, `super::fold`).
#[cfg(test)]
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

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
pub(super) mod tests;
