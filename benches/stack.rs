//! In-process cost of the whole per-connection stack (no socket): a real
//! daemon state on a temporary config dir, one initialized connection, and
//! frames fed through the bounded codec and the tower stack exactly as the
//! Unix connection driver does (`dispatch_now`, answers appended to one
//! output buffer).
//!
//! - `stack/status`: one `status` frame, dispatched and answered into an
//!   output buffer;
//! - `stack/status_batch_64`: 64 pipelined `status` frames decoded from one
//!   read buffer and answered into one output buffer (one driver batch);
//! - `stack/unknown_method`: a `-32601` answer, the cheapest full trip;
//! - `stack/frozen_batch_64`, the same-run reference for the batch: the same
//!   64 frames through the same codec, each answered as `e2e_load`'s
//!   `baseline-frozen` server answers it (serde_json reads the envelope, a
//!   `status` result rendered once is copied behind the frame's id; here the
//!   daemon's own, there a replica of the same members and size). Its ratio to `status_batch_64` is the in-process form of
//!   the end-to-end goal (docs/performance.md).
//!
//! What is left between these figures and the end-to-end `e2e_load` ones is
//! the socket, the runtime and the client.

use std::hint::black_box;
use std::sync::Arc;
use std::task::Context;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use zeroclaw::codec::{Frame, FrameCodec};
use zeroclaw::config::ConfigStore;
use zeroclaw::conn_state::{Conn, ConnCtx, PeerInfo, Transport};
use zeroclaw::connection::{build_stack, dispatch_now, Stack};
use zeroclaw::faults::Faults;
use zeroclaw::jsonrpc::AnswerFrame;
use zeroclaw::state::{Daemon, Flags, Paths};
use zeroclaw::store::Store;

#[path = "e2e_load/minimal_request.rs"]
mod minimal_request;
use minimal_request::MinimalRequest;

const INITIALIZE: &str =
    r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":0}"#;
const STATUS: &str = r#"{"jsonrpc":"2.0","method":"status","id":17}"#;
const UNKNOWN: &str = r#"{"jsonrpc":"2.0","method":"no/such","id":18}"#;

/// A daemon and one initialized local connection to it.
struct Fixture {
    _dir: tempdir::Dir,
    _daemon: Arc<Daemon>,
    conn: Conn,
    stack: Stack,
    tasks: TaskTracker,
}

mod tempdir {
    /// A scratch directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new() -> Self {
            let path = std::env::temp_dir().join(format!("zc-stack-bench-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(path.join("data")).expect("scratch dir");
            Self(path)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Fixture {
    async fn new() -> Self {
        let dir = tempdir::Dir::new();
        let cfg = dir.0.clone();
        let data = cfg.join("data");
        let config = ConfigStore::open(&cfg).expect("config");
        let faults = Arc::new(Faults::default());
        let store = Store::open(&data, faults.clone()).await.expect("store");
        let paths = Paths {
            config_dir: cfg.clone(),
            config_file: cfg.join("config.toml"),
            endpoint: data.join("daemon.sock").to_string_lossy().into_owned(),
            data_dir: data,
        };
        // This process is both the daemon and its peer: the shared operator
        // (by uid on Unix; a pipe peer carries none on Windows).
        #[cfg(unix)]
        let (uid, peer) = {
            // SAFETY: getuid never fails.
            let uid = unsafe { libc::getuid() };
            (Some(uid), PeerInfo::unix(uid, Some(std::process::id())))
        };
        #[cfg(windows)]
        let (uid, peer) = (None, PeerInfo::pipe(Some(std::process::id())));
        let daemon = Daemon::new(paths, config, store, faults, uid, Flags::default());
        let closed = CancellationToken::new();
        let (out, queue) = zeroclaw::outbound::write_queue(closed.clone());
        // Nothing here is queued: every answer of these frames is immediate.
        std::mem::forget(queue);
        let conn: Conn = Arc::new(ConnCtx::new(1, peer, Transport::Local, out, closed));
        let stack = build_stack(&daemon, &conn);
        let mut f = Fixture {
            _dir: dir,
            _daemon: daemon,
            conn,
            stack,
            tasks: TaskTracker::new(),
        };
        let answer = f.answer(INITIALIZE).expect("initialize answers at once");
        assert!(
            answer.starts_with(br#"{"jsonrpc":"2.0","result":"#),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        f
    }

    fn dispatch(&mut self, frame: String) -> Option<AnswerFrame> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        dispatch_now(&mut self.stack, &self.conn, &self.tasks, frame, &mut cx)
    }

    /// The whole frame answering `frame`, as bytes of its own.
    fn answer(&mut self, frame: &str) -> Option<Vec<u8>> {
        self.dispatch(frame.to_owned()).map(AnswerFrame::into_vec)
    }
}

fn stack(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    let mut f = rt.block_on(Fixture::new());

    let status = f.answer(STATUS).expect("status answers at once");
    assert!(status.starts_with(br#"{"jsonrpc":"2.0","result":{"server_version":"#));
    assert!(status.ends_with(b",\"id\":17}\n"));
    let unknown = f.answer(UNKNOWN).expect("an error answers at once");
    assert!(unknown.starts_with(br#"{"jsonrpc":"2.0","error":{"code":-32601"#));

    let mut g = c.benchmark_group("stack");
    g.throughput(Throughput::Elements(1));
    // One answer written into an output buffer, as the driver writes it.
    let mut one = BytesMut::with_capacity(4096);
    let mut answer_one = |f: &mut Fixture, frame: &str| {
        one.clear();
        if let Some(answer) = f.dispatch(black_box(frame).to_owned()) {
            answer.write_to(&mut one);
        }
        black_box(one.len())
    };
    g.bench_function("status", |b| b.iter(|| answer_one(&mut f, STATUS)));
    g.bench_function("unknown_method", |b| b.iter(|| answer_one(&mut f, UNKNOWN)));

    const BATCH: usize = 64;
    let mut input = Vec::new();
    for i in 0..BATCH {
        input.extend_from_slice(
            format!(r#"{{"jsonrpc":"2.0","method":"status","id":{i}}}"#).as_bytes(),
        );
        input.push(b'\n');
    }
    let mut codec = FrameCodec::default();
    let mut rbuf = BytesMut::with_capacity(64 * 1024);
    let mut out = BytesMut::with_capacity(64 * 1024);
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("status_batch_64", |b| {
        b.iter(|| {
            rbuf.extend_from_slice(&input);
            out.clear();
            while let Ok(Some(Frame::Line(frame))) = codec.decode(&mut rbuf) {
                if let Some(answer) = f.dispatch(frame) {
                    answer.write_to(&mut out);
                }
            }
            black_box(out.len())
        })
    });

    // The reference: the daemon's own result, rendered once, copied per answer.
    let prefix = br#"{"jsonrpc":"2.0","result":"#;
    let tail = b",\"id\":17}\n";
    let frozen = status[prefix.len()..status.len() - tail.len()].to_vec();
    g.bench_function("frozen_batch_64", |b| {
        b.iter(|| {
            rbuf.extend_from_slice(&input);
            out.clear();
            while let Ok(Some(Frame::Line(frame))) = codec.decode(&mut rbuf) {
                answer_frozen(&frame, &frozen, &mut out);
            }
            black_box(out.len())
        })
    });
    g.finish();
}

/// What `baseline-frozen` does with one frame (benches/e2e_load/baseline.rs).
fn answer_frozen(frame: &str, result: &[u8], out: &mut BytesMut) {
    let Ok(req) = serde_json::from_str::<MinimalRequest<'_>>(frame) else {
        return;
    };
    let (Some(id), Some("status")) = (req.id, req.method.as_deref()) else {
        return;
    };
    if req.jsonrpc.is_some_and(|v| v.get() == "\"2.0\"") {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","result":"#);
        out.extend_from_slice(result);
        out.extend_from_slice(b",\"id\":");
        out.extend_from_slice(id.get().as_bytes());
        out.extend_from_slice(b"}\n");
    }
}

criterion_group!(benches, stack);
criterion_main!(benches);
