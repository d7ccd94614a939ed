//! Text deltas already received, sent as one chunk: a fast server's
//! deltas cost one event each (persisted, notified) instead of one per
//! token, and a lone delta still goes out at once (docs/agents.md).

use super::delta::Calls;
use super::stream::Piece;
use super::End;
use crate::agent::coalesce::Coalesce;
use crate::agent::sink::EventSink;
use crate::agent::{ProviderFailure, ProviderReason};

/// Text deltas received but not yet sent: the shared [`Coalesce`], fed
/// from the stream's pieces.
#[derive(Default)]
pub struct Pending(Coalesce);

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
                    self.0.add(sink, false, &t).await?;
                    text.push_str(&t);
                }
                Piece::Reasoning(t) => self.0.add(sink, true, &t).await?,
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

    /// Whether the pending text is a whole chunk already.
    pub fn full(&self) -> bool {
        self.0.full()
    }

    /// Sends the pending text as one chunk.
    pub async fn flush<S: EventSink>(&mut self, sink: &mut S) -> Result<(), End> {
        Ok(self.0.flush(sink).await?)
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
