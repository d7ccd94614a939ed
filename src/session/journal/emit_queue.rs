//! The queue between a durable turn's event sink and its emitter task
//! (§9.3 group commit): what the sink hands over, in turn order, and
//! how much of it the emitter takes per commit.

use std::sync::{Mutex, MutexGuard};

use tokio::sync::{oneshot, Notify};

use crate::agent::SinkClosed;
use crate::store::CheckpointEvent;

/// Events waiting for the emitter (bounds memory when the client is slow).
pub(in crate::session) const EMIT_QUEUE: usize = 1024;
/// Bytes of message text waiting for the emitter: a fast agent's 16 MiB
/// item is not copied whole into the queue.
pub(in crate::session) const EMIT_QUEUE_BYTES: usize = 4 * 1024 * 1024;
/// Most events committed in one transaction.
pub(in crate::session) const MAX_GROUP: usize = 512;

/// What the emitter is asked to do, in turn order.
#[derive(Debug)]
pub(in crate::session) enum Item {
    /// Consecutive message chunks: `text` holds them back to back, `ends`
    /// where each one ends. Committed, then notified one by one.
    Texts { text: String, ends: Vec<usize> },
    /// Another visible event (a tool call or result): committed, then notified.
    Persist(CheckpointEvent),
    /// A thought chunk: notified only.
    Thought(String),
    /// An extra update: notified only.
    Extra(crate::agent::Extra),
    /// An approval request: notified only.
    Approval {
        request_id: String,
        tool_name: String,
        summary: String,
        timeout_secs: u64,
    },
    /// Acknowledged once everything before it was written.
    Flush(oneshot::Sender<()>),
}

impl Item {
    /// Bytes of message text the item holds.
    fn text_len(&self) -> usize {
        match self {
            Item::Texts { text, .. } => text.len(),
            _ => 0,
        }
    }

    /// How many events (notifications) the item stands for.
    pub(in crate::session) fn events(&self) -> usize {
        match self {
            Item::Texts { ends, .. } => ends.len(),
            _ => 1,
        }
    }
}

/// What the sink queues.
#[derive(Debug)]
pub(in crate::session) enum Push<'a> {
    Chunk(&'a str),
    Item(Item),
}

/// The queue between a turn's sink and its emitter task.
///
/// Message chunks are appended to the last queued [`Item::Texts`] when there
/// is one, so a fast agent costs one uncontended lock per chunk, not an
/// allocation and a channel send; the emitter is woken only when the queue
/// was empty. Holds at most [`EMIT_QUEUE`] events (the sink then waits).
#[derive(Debug, Default)]
pub struct Queue {
    state: Mutex<QueueState>,
    /// The emitter waits here for items (one waiter).
    ready: Notify,
    /// The sink waits here for room (one waiter).
    room: Notify,
}

#[derive(Debug, Default)]
struct QueueState {
    items: Vec<Item>,
    events: usize,
    /// Bytes of the queued message text.
    text_bytes: usize,
    /// The sink is done: the emitter ends once the queue is empty.
    sender_done: bool,
    /// The emitter stopped (a failed commit or a hard cancel): nothing
    /// more is taken.
    receiver_done: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // A panic while holding the lock leaves plain data; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a message chunk (appended to the last run of chunks when
    /// the queue ends with one) or another item.
    pub(in crate::session) async fn push(&self, what: Push<'_>) -> Result<(), SinkClosed> {
        let mut what = Some(what);
        loop {
            {
                let mut q = self.lock();
                if q.receiver_done {
                    return Err(SinkClosed);
                }
                let has_room = q.events < EMIT_QUEUE
                    && (q.text_bytes < EMIT_QUEUE_BYTES || q.items.is_empty());
                if has_room {
                    let was_empty = q.items.is_empty();
                    match (what.take(), q.items.last_mut()) {
                        (Some(Push::Chunk(p)), Some(Item::Texts { text, ends })) => {
                            text.push_str(p);
                            ends.push(text.len());
                            q.text_bytes += p.len();
                        }
                        (Some(Push::Chunk(p)), _) => {
                            q.items.push(Item::Texts {
                                text: p.to_owned(),
                                ends: vec![p.len()],
                            });
                            q.text_bytes += p.len();
                        }
                        (Some(Push::Item(item)), _) => q.items.push(item),
                        (None, _) => return Ok(()),
                    }
                    q.events += 1;
                    drop(q);
                    if was_empty {
                        self.ready.notify_one();
                    }
                    return Ok(());
                }
            }
            self.room.notified().await;
        }
    }

    /// Takes up to [`MAX_GROUP`] events' worth of items into `out`;
    /// `false` once the sink is done and everything was taken.
    pub(in crate::session) async fn take(&self, out: &mut Vec<Item>) -> bool {
        loop {
            {
                let mut q = self.lock();
                if !q.items.is_empty() {
                    let mut taken = 0;
                    let mut n = 0;
                    while n < q.items.len() && taken < MAX_GROUP {
                        let k = q.items[n].events();
                        if taken + k > MAX_GROUP {
                            // Split a long run of chunks at the group's end.
                            if let Item::Texts { text, ends } = &mut q.items[n] {
                                let keep = MAX_GROUP - taken;
                                let cut = ends[keep - 1];
                                let rest_text = text.split_off(cut);
                                let rest_ends =
                                    ends.split_off(keep).into_iter().map(|e| e - cut).collect();
                                q.items.insert(
                                    n + 1,
                                    Item::Texts {
                                        text: rest_text,
                                        ends: rest_ends,
                                    },
                                );
                                taken += keep;
                                n += 1;
                            }
                            break;
                        }
                        taken += k;
                        n += 1;
                    }
                    let bytes: usize = q.items[..n].iter().map(Item::text_len).sum();
                    out.extend(q.items.drain(..n));
                    q.events -= taken;
                    q.text_bytes -= bytes;
                    drop(q);
                    self.room.notify_one();
                    return true;
                }
                if q.sender_done {
                    return false;
                }
            }
            self.ready.notified().await;
        }
    }

    /// The sink is done (or dropped).
    pub(in crate::session) fn close_sender(&self) {
        self.lock().sender_done = true;
        self.ready.notify_one();
    }

    /// The emitter stopped: later pushes fail.
    pub(in crate::session) fn close_receiver(&self) {
        let mut q = self.lock();
        q.receiver_done = true;
        q.items.clear();
        q.events = 0;
        q.text_bytes = 0;
        drop(q);
        self.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn texts(items: &[Item]) -> Vec<(String, Vec<usize>)> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Texts { text, ends } => Some((text.clone(), ends.clone())),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn the_queue_merges_chunks_and_takes_at_most_a_group() {
        let q = Queue::default();
        for n in 0..600 {
            q.push(Push::Chunk(if n % 2 == 0 { "a" } else { "é" }))
                .await
                .unwrap();
        }
        let (ack, _done) = oneshot::channel();
        q.push(Push::Item(Item::Flush(ack))).await.unwrap();
        q.push(Push::Chunk("z")).await.unwrap();
        assert_eq!(q.lock().events, 602);
        let mut out = Vec::new();
        assert!(q.take(&mut out).await);
        // The first 512 chunks, cut off the run of 600.
        let t = texts(&out);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].0, "aé".repeat(256));
        assert_eq!(t[0].1.len(), 512);
        assert_eq!(t[0].1[..3], [1, 3, 4]);
        assert_eq!(*t[0].1.last().unwrap(), 768);
        out.clear();
        assert!(q.take(&mut out).await);
        let t = texts(&out);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].0, "aé".repeat(44));
        assert_eq!(t[0].1[..3], [1, 3, 4]);
        assert!(matches!(out[1], Item::Flush(_)));
        assert_eq!(t[1], ("z".to_owned(), vec![1]));
        assert_eq!(q.lock().events, 0);
        q.close_sender();
        out.clear();
        assert!(!q.take(&mut out).await);
        q.close_receiver();
        assert!(q.push(Push::Chunk("x")).await.is_err());
    }

    #[tokio::test]
    async fn a_full_queue_waits_for_the_emitter() {
        let q = Arc::new(Queue::default());
        for _ in 0..EMIT_QUEUE {
            q.push(Push::Chunk("x")).await.unwrap();
        }
        let pusher = tokio::spawn({
            let q = q.clone();
            async move { q.push(Push::Chunk("y")).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!pusher.is_finished(), "pushed past the bound");
        let mut out = Vec::new();
        assert!(q.take(&mut out).await);
        pusher.await.unwrap().unwrap();
        assert_eq!(q.lock().events, EMIT_QUEUE - MAX_GROUP + 1);
        // A stopped emitter releases a waiting sink with an error.
        let queued = q.lock().events;
        for _ in queued..EMIT_QUEUE {
            q.push(Push::Chunk("x")).await.unwrap();
        }
        let pusher = tokio::spawn({
            let q = q.clone();
            async move { q.push(Push::Chunk("y")).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        q.close_receiver();
        assert!(pusher.await.unwrap().is_err());
    }
}
