//! The WebSocket gateway answers a pipelining client exactly as the local
//! socket does: many messages sent before anything is read, and
//! every request answered exactly once, in the shared driver.

use crate::common;
use crate::gateway_support;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

use common::pipeline::{self, Script};
use common::Rng;
use gateway_support::Gateway;

#[tokio::test]
async fn many_messages_sent_before_reading_are_all_answered_once() {
    let gw = Gateway::start();
    let ws = gw.ws_initialized().await;
    let mut rng = Rng::new(0x7e57);
    // No prompts: the session's owner is the shared operator of every gateway client alike.
    let script = Script::default().mix(&mut rng, 20_000, false);
    let frames: Vec<String> = String::from_utf8(script.bytes())
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect();
    let (mut sink, mut stream) = ws.inner.split();
    let head = 2_000;
    // The first messages go out before the reader starts.
    for f in &frames[..head] {
        sink.feed(Message::Text(f.clone().into()))
            .await
            .expect("send");
    }
    sink.flush().await.expect("flush");
    let owed = frames.len();
    let reader = tokio::spawn(async move {
        let mut lines = Vec::new();
        while lines.len() < owed {
            let next = tokio::time::timeout(Duration::from_secs(60), stream.next()).await;
            match next {
                Ok(Some(Ok(Message::Text(t)))) => lines.push(t.as_str().to_owned()),
                Ok(Some(Ok(_))) => {}
                other => panic!("after {} of {owed} answers: {other:?}", lines.len()),
            }
        }
        lines
    });
    for f in &frames[head..] {
        sink.feed(Message::Text(f.clone().into()))
            .await
            .expect("send");
    }
    sink.flush().await.expect("flush");
    let lines = reader.await.expect("reader");
    let t = pipeline::check(&script, &lines);
    assert_eq!(t.answered + t.invalid_answered, frames.len());
}
