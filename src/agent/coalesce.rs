//! Text chunks already received, handed to the sink as one chunk: a fast
//! agent's chunks cost one event each (persisted, notified) per run instead
//! of one per chunk, while a lone chunk still goes out at once (the caller
//! flushes whenever nothing more is ready). Same shape as the openai
//! backend's `pending.rs` on h17 (docs/agents.md); that one can use this.

use super::sink::{EventSink, SinkClosed};

/// Received chunk text up to this many bytes is sent as one chunk (the
/// sink re-splits at 64 KiB anyway, §3.1).
pub const COALESCE_BYTES: usize = 64 * 1024;

/// Chunk text received but not yet sent, all of one stream.
#[derive(Debug, Default)]
pub struct Coalesce {
    thought: bool,
    text: String,
}

impl Coalesce {
    /// Adds `t` of the message (`thought = false`) or thought stream; the
    /// other stream's pending text is sent first, so order is kept.
    pub async fn add<S: EventSink>(
        &mut self,
        sink: &mut S,
        thought: bool,
        t: &str,
    ) -> Result<(), SinkClosed> {
        if self.thought != thought {
            self.flush(sink).await?;
            self.thought = thought;
        }
        self.text.push_str(t);
        Ok(())
    }

    /// Whether [`COALESCE_BYTES`] are pending (time to send).
    pub fn full(&self) -> bool {
        self.text.len() >= COALESCE_BYTES
    }

    /// Sends the pending text as one chunk.
    pub async fn flush<S: EventSink>(&mut self, sink: &mut S) -> Result<(), SinkClosed> {
        if self.text.is_empty() {
            return Ok(());
        }
        let r = if self.thought {
            sink.thought_chunk(&self.text).await
        } else {
            sink.message_chunk(&self.text).await
        };
        self.text.clear();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::testing::RecordingSink;

    #[tokio::test]
    async fn runs_of_one_stream_become_one_chunk_in_order() {
        let mut sink = RecordingSink::default();
        let mut c = Coalesce::default();
        for (thought, t) in [(false, "a"), (false, "b"), (true, "c"), (false, "d")] {
            c.add(&mut sink, thought, t).await.unwrap();
        }
        c.flush(&mut sink).await.unwrap();
        c.flush(&mut sink).await.unwrap();
        assert_eq!(sink.lines(), ["msg:ab", "thought:c", "msg:d"]);
    }
}
