//! A client that stops reading cannot make cancel ineffective (§8.6,
//! §10.1): its turn's producer stops waiting on the full
//! write queue once the turn is cancelled, so a cancelled turn ends within
//! the 5 s grace, and `session/close` or a replacing `session/new` from
//! other connections are answered within it, not after the 30 s stall policy.

// Unix only: shrinks a socket's receive buffer with setsockopt(SO_RCVBUF) on its raw descriptor.

use crate::common;
use common::sessions;
use common::start::start_echo;

use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

use common::{Client, Daemon};
use serde_json::json;
use sessions::*;

/// What a cancelled turn may take to end, whatever its clients do (§8.6).
const GRACE: Duration = Duration::from_secs(5);
const FLOOD: &str = "::chunk 1000\n::delay 1\n::repeat 16000000 y";

/// A client with a 4 KiB receive buffer that starts `FLOOD` on a new
/// session `sid` and then never reads again.
fn stalled_client(d: &Daemon, sid: &str, mode: &str) -> Client {
    let mut a = d.client();
    let size: libc::c_int = 4096;
    // SAFETY: a valid socket fd and a pointer to a live c_int of the given length.
    let r = unsafe {
        libc::setsockopt(
            a.stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "setsockopt(SO_RCVBUF)");
    a.new_session(sid, mode);
    a.start_prompt(sid, FLOOD);
    // Let the flood fill the socket buffers and the 64-frame queue.
    std::thread::sleep(Duration::from_millis(1500));
    a
}

/// Reads `id`'s answer on `c`, failing if it takes longer than `within`.
fn answer_within(c: &mut Client, id: &serde_json::Value, within: Duration) -> Frame {
    let start = Instant::now();
    loop {
        let left = within.saturating_sub(start.elapsed());
        let line = c
            .try_recv_line(left)
            .unwrap_or_else(|e| panic!("no answer to {id} within {within:?}: {e:?}"));
        let f = Frame::parse(line);
        if f.answers(id) {
            return f;
        }
    }
}

fn cancel_then_close(mode: &str) {
    let d = start_echo();
    let _a = stalled_client(&d, "st1", mode);
    let mut b = d.client();
    let r = b.ok("session/cancel", json!({"session_id": "st1"}));
    assert_eq!(r["cancelled"], true, "{r}");
    let close = b.send("session/close", json!({"session_id": "st1"}));
    let f = answer_within(&mut b, &close, GRACE + Duration::from_secs(2));
    assert_eq!(f.result(), &json!({"session_id": "st1", "closed": true}));
    // The daemon still serves everyone else.
    b.new_session("other", "chat");
    let t = b.prompt("other", "still here");
    assert_eq!(t.result()["content"], "still here");
}

#[test]
fn cancel_then_close_beats_a_stalled_client_chat() {
    cancel_then_close("chat");
}

#[test]
fn cancel_then_close_beats_a_stalled_client_acp() {
    cancel_then_close("acp");
}

#[test]
fn a_replacing_session_new_beats_a_stalled_client() {
    let d = start_echo();
    let _a = stalled_client(&d, "st2", "acp");
    let mut c = d.client();
    // `replace`: a session another connection uses is joined otherwise,
    // and the join would queue behind the stalled turn.
    let new = c.send(
        "session/new",
        json!({"agent_alias": "echo", "session_id": "st2", "chat_mode": "acp", "replace": true}),
    );
    let f = answer_within(&mut c, &new, GRACE + Duration::from_secs(2));
    assert_eq!(f.result()["resumed"], true, "{}", f.result());
    // The replacement is usable at once.
    let t = c.prompt("st2", "fresh");
    assert_eq!(t.result()["content"], "fresh");
}
