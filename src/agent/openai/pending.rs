//! Text deltas already received, sent as one chunk: a fast server's
//! deltas cost one event each (persisted, notified) instead of one per
//! token, and a lone delta still goes out at once (docs/agents.md).

use super::chunk::Decoded;
use super::delta::Calls;
use super::End;
use crate::agent::coalesce::Coalesce;
use crate::agent::sink::EventSink;
use crate::agent::{ProviderFailure, ProviderReason};

/// Text deltas received but not yet sent: the shared [`Coalesce`], fed
/// from the stream's pieces.
#[derive(Default)]
pub struct Pending(Coalesce);

impl Pending {
    /// Takes one chunk: its reasoning, then its content, join the pending
    /// text (sent first if the other stream was pending); its tool call
    /// deltas go to `calls`. Empty texts cost nothing.
    pub async fn absorb<S: EventSink>(
        &mut self,
        sink: &mut S,
        chunk: Decoded<'_>,
        text: &mut String,
        calls: &mut Calls,
    ) -> Result<(), End> {
        let d = chunk.delta;
        for t in [d.reasoning_content, d.reasoning].into_iter().flatten() {
            if !t.is_empty() {
                self.0.add(sink, true, &t).await?;
            }
        }
        if let Some(t) = d.content.filter(|t| !t.is_empty()) {
            self.0.add(sink, false, &t).await?;
            text.push_str(&t);
        }
        if let Some(deltas) = d.tool_calls.filter(|c| !c.is_empty()) {
            calls.add(deltas).map_err(|m| {
                End::Provider(ProviderFailure {
                    reason: ProviderReason::Protocol,
                    status: None,
                    message: m,
                })
            })?;
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
    use crate::agent::openai::chunk::decode;
    use crate::agent::testing::RecordingSink;

    #[tokio::test]
    async fn joins_one_stream_and_keeps_the_order_across_streams() {
        let mut sink = RecordingSink::default();
        let (mut text, mut calls, mut p) = (String::new(), Calls::default(), Pending::default());
        let chunks = [
            r#"{"choices":[{"delta":{"reasoning_content":"a","reasoning":"b"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"","content":"c"}}]}"#,
            r#"{"choices":[{"delta":{"content":"d"},"finish_reason":"stop"}]}"#,
        ];
        for c in chunks {
            let chunk = decode(c).unwrap();
            p.absorb(&mut sink, chunk, &mut text, &mut calls).await.ok();
        }
        let chunk = decode(r#"{"choices":[{"delta":{"content":"e"}}]}"#).unwrap();
        p.absorb(&mut sink, chunk, &mut text, &mut calls).await.ok();
        p.flush(&mut sink).await.ok();
        p.flush(&mut sink).await.ok();
        assert_eq!(sink.lines(), ["thought:ab", "msg:cde"]);
        assert_eq!(text, "cde");
    }
}
