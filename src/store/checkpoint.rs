//! Turn checkpoints (§9.3): begin, append, finalize, and the folding of a
//! checkpoint into transcript rows that finalize, recovery and kill share.
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

/// The stored payload as it is read back: a flat object (an internally
/// tagged enum cannot carry a `RawValue` through deserialization).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Payload<'a> {
    kind: &'a str,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Box<RawValue>>,
    #[serde(default)]
    output: Option<String>,
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
        if done.rows_affected() == 0 {
            return Err(StoreError::State("no open turn checkpoint"));
        }
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
/// reads them with [`read_checkpoint`]).
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

/// Events per query when a checkpoint is read back for folding.
const READ_CHUNK: i64 = 4096;

/// Reads session `row`'s checkpoint events into `fold`, in `id` order.
///
/// Every row fetched is a round trip to the driver's worker thread, so each
/// query returns up to [`READ_CHUNK`] events as one value: each framed as
/// `<id>:<byte length>:<payload>`, unambiguous whatever a payload holds.
/// The ids are checked to ascend (SQLite concatenates in scan order, which
/// is `id` order here, but does not promise it); the events are sorted if
/// they ever do not.
async fn read_checkpoint(
    conn: &mut SqliteConnection,
    row: i64,
    fold: &mut Fold,
) -> Result<(), StoreError> {
    let mut after = i64::MIN;
    loop {
        let (last, count, joined): (Option<i64>, i64, Option<Vec<u8>>) = sqlx::query_as(
            "SELECT max(id), count(*), \
                    group_concat(id || ':' || octet_length(payload) || ':' || payload, '') \
             FROM (SELECT id, payload FROM acp_checkpoint_events \
                   WHERE session_row = ? AND id > ? ORDER BY id LIMIT ?)",
        )
        .bind(row)
        .bind(after)
        .bind(READ_CHUNK)
        .fetch_one(&mut *conn)
        .await?;
        let (Some(last), Some(joined)) = (last, joined) else {
            return Ok(());
        };
        let mut events = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        split_framed(&joined, &mut events)?;
        if events.len() as i64 != count {
            return Err(framing_error());
        }
        if !events.windows(2).all(|w| w[0].0 < w[1].0) {
            events.sort_by_key(|e| e.0);
        }
        for (_, payload) in &events {
            fold.event(payload);
        }
        if count < READ_CHUNK {
            return Ok(());
        }
        after = last;
    }
}

/// Splits `<id>:<byte length>:<payload>` records.
fn split_framed<'a>(mut rest: &'a [u8], out: &mut Vec<(i64, &'a [u8])>) -> Result<(), StoreError> {
    fn number<T: std::str::FromStr>(rest: &mut &[u8]) -> Result<T, StoreError> {
        let colon = rest
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(framing_error)?;
        let n = std::str::from_utf8(&rest[..colon])
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(framing_error)?;
        *rest = &rest[colon + 1..];
        Ok(n)
    }
    while !rest.is_empty() {
        let id = number::<i64>(&mut rest)?;
        let len = number::<usize>(&mut rest)?;
        let payload = rest.get(..len).ok_or_else(framing_error)?;
        out.push((id, payload));
        rest = &rest[len..];
    }
    Ok(())
}

fn framing_error() -> StoreError {
    StoreError::Corrupt("checkpoint read-back framing".into())
}

/// Whether folding also moves the session's `last_activity` to now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Touch {
    Yes,
    No,
}

/// Transcript rows written per statement batch (one round trip each).
const INSERT_GROUP: usize = 16;

/// Folds session `row`'s checkpoint into transcript rows with the next seqs,
/// appends a `system/interruption_marker` row when `marker` is given, and
/// deletes the checkpoint (and with [`Touch::Yes`] moves `last_activity` to
/// now). `None` when there is no checkpoint (nothing changed). Runs inside
/// the caller's transaction.
///
/// Every statement sent is a round trip to the driver's worker thread, so
/// the writes go as a few multi-statement batches: up to [`INSERT_GROUP`]
/// row inserts each, the last one followed by the deletes.
pub(super) async fn fold_checkpoint(
    conn: &mut SqliteConnection,
    row: i64,
    marker: Option<&str>,
    touch: Touch,
) -> Result<Option<Vec<TranscriptRow>>, StoreError> {
    let head: Option<(String, i64)> = sqlx::query_as(
        "SELECT turn_id, \
                (SELECT COALESCE(MAX(seq), 0) FROM acp_transcript WHERE session_row = ?1) \
         FROM acp_turn_checkpoints WHERE session_row = ?1",
    )
    .bind(row)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((turn_id, last)) = head else {
        return Ok(None);
    };
    let mut fold = Fold::new(last + 1);
    read_checkpoint(conn, row, &mut fold).await?;
    let mut rows = fold.finish();
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
    const INSERT: &str = "INSERT INTO acp_transcript (session_row, seq, turn_id, role, kind, \
         content, tool_call_id, tool_name, tool_input, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);";
    const DELETE: &str = "DELETE FROM acp_checkpoint_events WHERE session_row = ?; \
         DELETE FROM acp_turn_checkpoints WHERE session_row = ?;";
    const TOUCH: &str = "UPDATE acp_sessions SET last_activity = ? WHERE id = ?;";
    let now = utc_now();
    let groups = rows.len().div_ceil(INSERT_GROUP).max(1);
    let mut chunks = rows.chunks(INSERT_GROUP);
    for g in 0..groups {
        let group = chunks.next().unwrap_or_default();
        let last_group = g + 1 == groups;
        let mut sql = INSERT.repeat(group.len());
        if last_group {
            sql.push_str(DELETE);
            if touch == Touch::Yes {
                sql.push_str(TOUCH);
            }
        }
        let mut q = sqlx::query(&sql);
        for r in group {
            q = q
                .bind(row)
                .bind(r.seq)
                .bind(&turn_id)
                .bind(&r.role)
                .bind(&r.kind)
                .bind(&r.content)
                .bind(&r.tool_call_id)
                .bind(&r.tool_name)
                .bind(r.tool_input.as_ref().map(|i| i.get()))
                .bind(&now);
        }
        if last_group {
            q = q.bind(row).bind(row);
            if touch == Touch::Yes {
                q = q.bind(&now).bind(row);
            }
        }
        q.execute(&mut *conn).await?;
    }
    Ok(Some(rows))
}

/// The §9.3 folding: the prompt is one `user/message` row, a run of
/// consecutive `text` events one `assistant/message` row (an empty run
/// writes nothing), each tool call and result one row. An unreadable
/// payload is skipped with a warning, so one bad event never makes the
/// rest of the turn unrecoverable.
struct Fold {
    rows: Vec<TranscriptRow>,
    /// The pending run of text.
    text: String,
    next_seq: i64,
}

/// A text payload as this module writes it, up to its text.
const TEXT_PREFIX: &[u8] = br#"{"kind":"text","text":""#;

impl Fold {
    fn new(first_seq: i64) -> Self {
        Fold {
            rows: Vec::new(),
            text: String::new(),
            next_seq: first_seq,
        }
    }

    fn push(&mut self, role: &str, kind: &str, content: String) -> &mut TranscriptRow {
        self.rows.push(TranscriptRow {
            seq: self.next_seq,
            role: role.into(),
            kind: kind.into(),
            content,
            tool_call_id: None,
            tool_name: None,
            tool_input: None,
        });
        self.next_seq += 1;
        let last = self.rows.len() - 1;
        &mut self.rows[last]
    }

    fn end_text_run(&mut self) {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.push("assistant", "message", text);
        }
    }

    /// Folds in one stored payload.
    fn event(&mut self, raw: &[u8]) {
        // Fast path: a text payload in the exact form this module writes,
        // whose text needs no unescaping, is its text verbatim (what the
        // JSON parser below would make of it, without the allocations).
        if let Some(mid) = raw
            .strip_prefix(TEXT_PREFIX)
            .and_then(|r| r.strip_suffix(b"\"}"))
        {
            if mid.iter().all(|&b| b != b'"' && b != b'\\' && b >= 0x20) {
                if let Ok(t) = std::str::from_utf8(mid) {
                    self.text.push_str(t);
                    return;
                }
            }
        }
        let p: Payload<'_> = match serde_json::from_slice(raw) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "skipping unreadable checkpoint event");
                return;
            }
        };
        if p.kind == "text" {
            self.text.push_str(p.text.as_deref().unwrap_or_default());
            return;
        }
        self.end_text_run();
        match p.kind {
            "user" => {
                self.push("user", "message", p.text.unwrap_or_default());
            }
            "tool_call" => {
                let r = self.push("assistant", "tool_call", String::new());
                r.tool_call_id = p.id;
                r.tool_name = p.name;
                r.tool_input = p.input;
            }
            "tool_result" => {
                let output = p.output.unwrap_or_default();
                // Stored outputs are already bounded; bounding again would
                // cut the suffix of a bounded one.
                let output = if output.len() > TOOL_OUTPUT_MAX + TRUNCATION_SUFFIX.len() {
                    bound_text(&output, TOOL_OUTPUT_MAX).into_owned()
                } else {
                    output
                };
                let r = self.push("tool", "tool_result", output);
                r.tool_call_id = p.id;
                r.tool_name = p.name;
            }
            other => tracing::warn!(kind = other, "skipping checkpoint event of unknown kind"),
        }
    }

    fn finish(mut self) -> Vec<TranscriptRow> {
        self.end_text_run();
        self.rows
    }
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
pub(super) mod tests;
