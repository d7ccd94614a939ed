//! Folding a turn checkpoint into transcript rows (§9.3), shared by
//! finalize, recovery and kill: reading the events back in blocks, the fold
//! itself, and writing the rows and deleting the checkpoint in the caller's
//! transaction.

use serde::Deserialize;
use serde_json::value::RawValue;
use sqlx::SqliteConnection;

use super::projection::TranscriptRow;
use super::{bound_text, utc_now, StoreError, TRUNCATION_SUFFIX};
use crate::agent::{ContextMessage, Kind, Role};
use crate::limits::TOOL_OUTPUT_MAX;

/// The stored payload as it is read back: a flat object (an internally
/// tagged enum cannot carry a `RawValue` through deserialization).
#[derive(Debug, Default, Deserialize)]
struct Payload<'a> {
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

/// Events per query when a checkpoint is read back for folding.
pub(super) const READ_CHUNK: i64 = 4096;

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
            message: ContextMessage {
                kind: Kind::InterruptionMarker,
                ..ContextMessage::text(Role::System, marker)
            },
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
            let m = &r.message;
            q = q
                .bind(row)
                .bind(r.seq)
                .bind(&turn_id)
                .bind(m.role.as_str())
                .bind(m.kind.as_str())
                .bind(&m.content)
                .bind(&m.tool_call_id)
                .bind(&m.tool_name)
                .bind(m.tool_input.as_ref().map(|i| i.get()))
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

/// A text payload as `checkpoint.rs` writes it, up to its text.
const TEXT_PREFIX: &[u8] = br#"{"kind":"text","text":""#;

impl Fold {
    fn new(first_seq: i64) -> Self {
        Fold {
            rows: Vec::new(),
            text: String::new(),
            next_seq: first_seq,
        }
    }

    fn push(&mut self, role: Role, kind: Kind, content: String) -> &mut ContextMessage {
        self.rows.push(TranscriptRow {
            seq: self.next_seq,
            message: ContextMessage {
                kind,
                ..ContextMessage::text(role, content)
            },
        });
        self.next_seq += 1;
        let last = self.rows.len() - 1;
        &mut self.rows[last].message
    }

    fn end_text_run(&mut self) {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.push(Role::Assistant, Kind::Message, text);
        }
    }

    /// Folds in one stored payload.
    fn event(&mut self, raw: &[u8]) {
        // Fast path: a text payload in the exact form the append writes,
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
                self.push(Role::User, Kind::Message, p.text.unwrap_or_default());
            }
            "tool_call" => {
                let r = self.push(Role::Assistant, Kind::ToolCall, String::new());
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
                let r = self.push(Role::Tool, Kind::ToolResult, output);
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
