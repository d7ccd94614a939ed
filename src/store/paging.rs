//! `session/messages` pages (§8.11), shared by the ACP transcript and the
//! Chat history.
//!
//! Rows are addressed by 0-based position in `seq` order. A page holds the
//! newest rows before `before_index` (clamped to `total`), at most `limit`
//! of them, and no more than fit in a 4 MiB `messages` array — but always at
//! least one row, so a client paging with `before_index = start` always
//! makes progress. Rows are streamed newest first and reading stops as soon
//! as the budget is spent, so a page never loads more than it returns (plus
//! one row). A `content` over 1 MiB is bounded (§3.1) and flagged.

use std::io;

use futures_util::TryStreamExt;
use serde::Serialize;
use sqlx::sqlite::SqliteArguments;
use sqlx::Arguments;

use super::projection::TranscriptRow;
use super::{bound_text, Store, StoreError};
use crate::agent::ContextMessage;

/// The `messages` JSON of a page stays within this many bytes (unless one
/// row alone is larger).
pub const PAGE_JSON_MAX: usize = 4 * 1024 * 1024;

/// A row's `content` is bounded at this many bytes within a page.
pub const PAGE_CONTENT_MAX: usize = 1024 * 1024;

/// One page of raw history.
#[derive(Debug, Clone, Serialize)]
pub struct MessagesPage {
    /// Rows in the store.
    pub total: u64,
    /// The 0-based position of the first row of `messages`.
    pub start: u64,
    /// The rows `start .. start + messages.len()`.
    pub messages: Vec<MessageEntry>,
}

/// One row as `session/messages` writes it: `seq`, then the message as
/// every message is written (`role`, `kind`, `content`, the tool members
/// when present), then `truncated` when set.
#[derive(Debug, Clone, Serialize)]
pub struct MessageEntry {
    /// The permanent 1-based position.
    pub seq: i64,
    /// The message, its `content` bounded at 1 MiB.
    #[serde(flatten)]
    pub message: ContextMessage,
    /// Whether `content` was bounded.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl From<TranscriptRow> for MessageEntry {
    fn from(r: TranscriptRow) -> Self {
        let mut message = r.message;
        let bounded = bound_text(&message.content, PAGE_CONTENT_MAX);
        let truncated = bounded.len() != message.content.len();
        if truncated {
            message.content = bounded.into_owned();
        }
        MessageEntry {
            seq: r.seq,
            message,
            truncated,
        }
    }
}

/// Which history a page reads.
#[derive(Debug, Clone, Copy)]
pub(super) enum History<'a> {
    Acp(i64),
    Chat(&'a str),
}

impl Store {
    /// A page of session `row`'s transcript.
    pub async fn durable_messages(
        &self,
        row: i64,
        before_index: Option<u64>,
        limit: u32,
    ) -> Result<MessagesPage, StoreError> {
        self.page(History::Acp(row), before_index, limit).await
    }

    /// A page of a Chat session's history (every entry a `message`).
    pub async fn chat_messages(
        &self,
        session_id: &str,
        before_index: Option<u64>,
        limit: u32,
    ) -> Result<MessagesPage, StoreError> {
        self.page(History::Chat(session_id), before_index, limit)
            .await
    }

    async fn page(
        &self,
        history: History<'_>,
        before_index: Option<u64>,
        limit: u32,
    ) -> Result<MessagesPage, StoreError> {
        const COLUMNS: &str =
            "SELECT seq, role, kind, content, tool_call_id, tool_name, tool_input";
        const CHAT_COLUMNS: &str = "SELECT seq, role, 'message' AS kind, content, \
             NULL AS tool_call_id, NULL AS tool_name, NULL AS tool_input";
        let (count_sql, rows_sql) = match history {
            History::Acp(_) => (
                "SELECT COUNT(*) FROM acp_transcript WHERE session_row = ?".to_owned(),
                format!("{COLUMNS} FROM acp_transcript WHERE session_row = ? ORDER BY seq DESC LIMIT ? OFFSET ?"),
            ),
            History::Chat(_) => (
                "SELECT COUNT(*) FROM chat_messages WHERE session_id = ?".to_owned(),
                format!("{CHAT_COLUMNS} FROM chat_messages WHERE session_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?"),
            ),
        };
        let mut tx = self.read_tx().await?;
        let count: i64 = sqlx::query_scalar_with(&count_sql, key_args(history, &[])?)
            .fetch_one(&mut *tx)
            .await?;
        let total = u64::try_from(count).unwrap_or(0);
        let before = before_index.map_or(total, |b| b.min(total));
        let skip = i64::try_from(total - before).unwrap_or(i64::MAX);

        let mut messages = Vec::new();
        let mut json_len = 2; // "[" and "]"
        {
            let args = key_args(history, &[i64::from(limit), skip])?;
            let mut stream = sqlx::query_with(&rows_sql, args).fetch(&mut *tx);
            while let Some(r) = stream.try_next().await? {
                let entry = MessageEntry::from(TranscriptRow::from_sql(&r)?);
                let len = json_len_of(&entry)? + usize::from(!messages.is_empty());
                if !messages.is_empty() && json_len + len > PAGE_JSON_MAX {
                    break;
                }
                json_len += len;
                messages.push(entry);
            }
        }
        tx.commit().await?;
        messages.reverse();
        Ok(MessagesPage {
            total,
            start: before - messages.len() as u64,
            messages,
        })
    }
}

/// The arguments of a page query: the history's key, then `extra`.
fn key_args<'q>(history: History<'q>, extra: &[i64]) -> Result<SqliteArguments<'q>, StoreError> {
    let mut args = SqliteArguments::default();
    let bound = match history {
        History::Acp(row) => args.add(row),
        History::Chat(id) => args.add(id),
    };
    bound
        .and_then(|()| extra.iter().try_for_each(|v| args.add(*v)))
        .map_err(|e| StoreError::sqlite(e.to_string()))?;
    Ok(args)
}

/// The serialized length of one entry, without building the string.
fn json_len_of(entry: &MessageEntry) -> Result<usize, StoreError> {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, entry)
        .map_err(|e| StoreError::Corrupt(format!("message entry: {e}")))?;
    Ok(count.0)
}

#[cfg(test)]
#[path = "paging_tests.rs"]
mod tests;
