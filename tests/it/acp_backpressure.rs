//! A client that stops reading holds the daemon back (§4 "Write queue
//! per connection": 64 frames or 16 MiB, whichever first; producers wait).
//!
//! Observed through the database: an ACP turn commits each chunk before its
//! notification is queued (§9.3), so the chunks committed while
//! the client reads nothing count what the daemon ran ahead. That is at most
//! one commit batch of the turn's emitter, the 64 queued frames, and what the
//! kernel's socket buffer took; not the ~160,000 frames that 16 MiB of
//! ~105-byte chunk notifications would be.

// Unix only: sizes a Unix stream socket's kernel buffers with UnixStream::pair.

use crate::common;

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::acp::*;
use serde_json::json;

/// Frames the write queue may hold (§4).
const QUEUE_FRAMES: usize = 64;
/// Events one emitter transaction may commit before their notifications are written.
const COMMIT_BATCH: usize = 512;

/// How many `frame`-sized writes a Unix stream socket's kernel buffers
/// accept before a writer would block (in 64 KiB writes, as a batching writer does).
fn kernel_buffer_frames(frame: usize) -> usize {
    let (a, _b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    let block = vec![b'x'; 64 * 1024];
    let mut total = 0;
    loop {
        match (&a).write(&block) {
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    total / frame + 1
}

#[test]
fn a_client_that_stops_reading_stops_the_turn_within_the_write_queue_bound() {
    let sid = "bp";
    let (env, mut rpc) = AcpEnv::with_session(&echo_config(""), sid, "acp");
    let frame = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","type":"agent_message_chunk","text":"x"}}}}"#
    )
    .len()
        + 1;
    let kernel = kernel_buffer_frames(frame);
    let bound = QUEUE_FRAMES + COMMIT_BATCH + kernel;
    // One million one-character chunks, and the client never reads.
    let id = rpc.start_prompt(sid, "::chunk 1\n::repeat 1000000 x");
    let events = || {
        db_int(
            &env.db(),
            &format!(
                // The consecutive text events of one commit are stored as
                // one event: count the one-character chunks by their text.
                "SELECT COALESCE(SUM(CASE WHEN e.payload ->> 'kind' = 'text' \
                 THEN length(e.payload ->> 'text') ELSE 1 END), 0) \
                 FROM acp_checkpoint_events e JOIN acp_sessions s \
                 ON s.id = e.session_row WHERE s.session_id = '{sid}'"
            ),
        ) as usize
    };
    // Wait until the daemon stops committing (unchanged for 1 s), or it passes the bound.
    let quiet = (Duration::from_secs(1), Duration::from_secs(30));
    let last = common::wait::settled("committed events", quiet, events);
    let _ = writeln!(
        std::io::stderr(),
        "stopped reader: {last} events committed (bound {bound}: queue {QUEUE_FRAMES} + batch {COMMIT_BATCH} + kernel buffer {kernel} frames of {frame} bytes)"
    );
    // The prompt event is one of them.
    assert!(
        last <= bound + 1,
        "the daemon ran {last} events ahead of a client that reads nothing (bound {bound})"
    );
    assert!(last > 1, "the turn never started");
    // The turn still completes once the client reads again.
    let mut ctl = env.rpc();
    ctl.ok("session/cancel", json!({"session_id": sid}));
    let t = rpc.finish_turn(sid, &id, Duration::from_secs(60));
    assert_eq!(t.result()["stop_reason"], "cancelled");
}
