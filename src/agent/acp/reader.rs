//! The task that reads the agent's stdout: lines → messages, handed to the
//! turn through a bounded channel, in the order the agent wrote them.
//!
//! While the turn is busy (committing a checkpoint, waiting on a slow
//! client) and the channel is full, text chunks that follow one another are
//! joined into the one not yet handed over, up to [`HELD_CHUNK_BYTES`]: a
//! fast agent keeps writing instead of waiting for every commit, and the
//! turn gets one message for the run. Anything else, or a held chunk past
//! the bound, waits for room: that wait is the backpressure that reaches
//! the agent's pipe. With room, a chunk is handed over at once, so a slow
//! agent's chunks are not delayed.

use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use super::incoming::{self, Chunk, FromAgent};
use super::wire::{LineReader, ReadFault};
use crate::agent::coalesce::COALESCE_BYTES;

/// The most chunk text held back while the channel is full.
pub const HELD_CHUNK_BYTES: usize = COALESCE_BYTES;

type Inbound = mpsc::Sender<Result<FromAgent, ReadFault>>;

pub async fn read_stdout<R: AsyncRead + Unpin>(stdout: R, tx: Inbound, alias: String) {
    let mut reader = LineReader::new(stdout);
    let mut held: Option<Chunk> = None;
    loop {
        let line = match held.take() {
            None => reader.next_line().await,
            Some(chunk) => tokio::select! {
                biased;
                permit = tx.reserve() => match permit {
                    Ok(permit) => {
                        permit.send(Ok(FromAgent::Chunk(chunk)));
                        continue;
                    }
                    Err(_) => return,
                },
                line = reader.next_line() => {
                    held = Some(chunk);
                    line
                }
            },
        };
        let item = match line {
            Ok(line) => incoming::parse(&line),
            Err(fault) => Err(fault),
        };
        let item = match (item, &mut held) {
            (Ok(FromAgent::Chunk(next)), Some(chunk)) if joins(chunk, &next) => {
                chunk.text.push_str(&next.text);
                continue;
            }
            (item, _) => item,
        };
        if let Some(chunk) = held.take() {
            if tx.send(Ok(FromAgent::Chunk(chunk))).await.is_err() {
                return;
            }
        }
        let item = match item {
            Ok(FromAgent::Chunk(chunk)) => {
                held = Some(chunk);
                continue;
            }
            other => other,
        };
        let last = item.is_err();
        if let Err(fault) = &item {
            if *fault != ReadFault::Eof {
                tracing::warn!(event = "acp_agent_bad_output", agent = %alias, reason = %fault.describe());
            }
        }
        if tx.send(item).await.is_err() || last {
            return;
        }
    }
}

/// `next` continues `held`'s stream and fits under the bound.
fn joins(held: &Chunk, next: &Chunk) -> bool {
    held.session_id == next.session_id
        && held.thought == next.thought
        && held.text.len() + next.text.len() <= HELD_CHUNK_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn chunk_line(session: &str, kind: &str, text: &str) -> String {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"{session}\",\"update\":{{\"sessionUpdate\":\"{kind}\",\"content\":{{\"type\":\"text\",\"text\":\"{text}\"}}}}}}}}\n"
        )
    }

    fn shown(m: &FromAgent) -> String {
        match m {
            FromAgent::Chunk(c) => format!("{}:{}:{}", c.session_id, c.thought, c.text),
            FromAgent::Notification { method, .. } => format!("note:{method}"),
            FromAgent::Response { id, .. } => format!("response:{id}"),
            FromAgent::Request { method, .. } => format!("request:{method}"),
        }
    }

    #[tokio::test]
    async fn a_busy_turn_gets_runs_of_chunks_joined_in_order() {
        let (mut agent, stdout) = tokio::io::duplex(1 << 20);
        let (tx, mut rx) = mpsc::channel(1);
        let task = tokio::spawn(read_stdout(stdout, tx, "a".into()));
        let mut all = String::new();
        for t in ["a", "b"] {
            all.push_str(&chunk_line("s", "agent_message_chunk", t));
        }
        all.push_str(&chunk_line("s", "agent_thought_chunk", "c"));
        all.push_str(&chunk_line("t", "agent_thought_chunk", "d"));
        all.push_str(r#"{"jsonrpc":"2.0","method":"other"}"#);
        all.push('\n');
        for t in ["e", "f", "g"] {
            all.push_str(&chunk_line("s", "agent_message_chunk", t));
        }
        all.push_str(r#"{"jsonrpc":"2.0","id":1,"result":null}"#);
        all.push('\n');
        agent.write_all(all.as_bytes()).await.unwrap();
        drop(agent);
        // Nothing is taken until the agent wrote everything and left.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let mut got = Vec::new();
        while let Some(m) = rx.recv().await {
            match m {
                Ok(m) => got.push(shown(&m)),
                Err(fault) => got.push(format!("{fault:?}")),
            }
        }
        task.await.unwrap();
        // The first chunk went out at once (there was room); the rest of
        // each run was joined while the channel was full.
        assert_eq!(
            got,
            [
                "s:false:a",
                "s:false:b",
                "s:true:c",
                "t:true:d",
                "note:other",
                "s:false:efg",
                "response:1",
                "Eof"
            ]
        );
    }

    #[tokio::test]
    async fn with_room_a_chunk_is_handed_over_while_the_agent_is_still_writing() {
        let (mut agent, stdout) = tokio::io::duplex(1 << 16);
        let (tx, mut rx) = mpsc::channel(8);
        let _task = tokio::spawn(read_stdout(stdout, tx, "a".into()));
        agent
            .write_all(chunk_line("s", "agent_message_chunk", "x").as_bytes())
            .await
            .unwrap();
        let m = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv()).await;
        let Ok(Some(Ok(m))) = m else {
            panic!("the chunk was held back: {m:?}")
        };
        assert_eq!(shown(&m), "s:false:x");
        drop(agent);
    }

    #[tokio::test]
    async fn held_text_stays_under_its_bound() {
        let (mut agent, stdout) = tokio::io::duplex(1 << 22);
        let (tx, mut rx) = mpsc::channel(1);
        let task = tokio::spawn(read_stdout(stdout, tx, "a".into()));
        let piece = "y".repeat(1000);
        let n = 3 * HELD_CHUNK_BYTES / 1000;
        let mut all = String::new();
        for _ in 0..n {
            all.push_str(&chunk_line("s", "agent_message_chunk", &piece));
        }
        agent.write_all(all.as_bytes()).await.unwrap();
        drop(agent);
        let mut total = 0;
        while let Some(Ok(FromAgent::Chunk(c))) = rx.recv().await {
            assert!(c.text.len() <= HELD_CHUNK_BYTES, "{}", c.text.len());
            total += c.text.len();
        }
        task.await.unwrap();
        assert_eq!(total, n * 1000);
    }
}
