//! Text deltas already received, sent as one chunk: a fast server's
//! deltas cost one event each (persisted, notified) instead of one per
//! token, and a lone delta still goes out at once (docs/agents.md).

use super::delta::Calls;
use super::stream::Piece;
use super::End;
use crate::agent::sink::EventSink;
use crate::agent::{ProviderFailure, ProviderReason};

/// Received deltas up to this many bytes are sent as one chunk.
pub const COALESCE_BYTES: usize = 64 * 1024;

/// Text deltas received but not yet sent, all of one stream.
#[derive(Default)]
pub struct Pending {
    thought: bool,
    pub text: String,
}

impl Pending {
    /// Takes one chunk's pieces: text joins the pending text (sent first if
    /// the other stream was pending), tool call deltas go to `calls`.
    pub async fn absorb<S: EventSink>(
        &mut self,
        sink: &mut S,
        pieces: Vec<Piece>,
        text: &mut String,
        calls: &mut Calls,
    ) -> Result<(), End> {
        for piece in pieces {
            match piece {
                Piece::Content(t) => {
                    self.add(sink, false, &t).await?;
                    text.push_str(&t);
                }
                Piece::Reasoning(t) => self.add(sink, true, &t).await?,
                Piece::ToolCalls(deltas) => calls.add(deltas).map_err(|m| {
                    End::Provider(ProviderFailure {
                        reason: ProviderReason::Protocol,
                        status: None,
                        message: m,
                    })
                })?,
                Piece::Finish => {}
            }
        }
        Ok(())
    }

    async fn add<S: EventSink>(&mut self, sink: &mut S, thought: bool, t: &str) -> Result<(), End> {
        if self.thought != thought {
            self.flush(sink).await?;
            self.thought = thought;
        }
        self.text.push_str(t);
        Ok(())
    }

    /// Sends the pending text as one chunk.
    pub async fn flush<S: EventSink>(&mut self, sink: &mut S) -> Result<(), End> {
        if self.text.is_empty() {
            return Ok(());
        }
        if self.thought {
            sink.thought_chunk(&self.text).await?;
        } else {
            sink.message_chunk(&self.text).await?;
        }
        self.text.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::testing::RecordingSink;

    #[tokio::test]
    async fn joins_one_stream_and_keeps_the_order_across_streams() {
        let mut sink = RecordingSink::default();
        let (mut text, mut calls, mut p) = (String::new(), Calls::default(), Pending::default());
        let pieces = vec![
            Piece::Reasoning("a".into()),
            Piece::Reasoning("b".into()),
            Piece::Content("c".into()),
            Piece::Content("d".into()),
            Piece::Finish,
        ];
        p.absorb(&mut sink, pieces, &mut text, &mut calls)
            .await
            .ok();
        p.absorb(
            &mut sink,
            vec![Piece::Content("e".into())],
            &mut text,
            &mut calls,
        )
        .await
        .ok();
        p.flush(&mut sink).await.ok();
        p.flush(&mut sink).await.ok();
        assert_eq!(sink.lines(), ["thought:ab", "msg:cde"]);
        assert_eq!(text, "cde");
    }
}
