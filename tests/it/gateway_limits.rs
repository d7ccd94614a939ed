//! §12 timings and bounds, on a gateway started in process with short
//! intervals (`gateway::Settings`, a constructor parameter: no config key
//! changes them): the heartbeat, the head deadline, the bind deadline of a
//! WebSocket session, the bounds on connections without a credential (the
//! oldest evicted, never the newcomer), the session bound, and the end of a
//! pairing lockout.

use crate::common;
use crate::gateway_support;

use std::io::Read;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gateway_support::{post_pair, Got, Ws};
use serde_json::json;
use zeroclaw::config::{token_digest, ConfigStore};
use zeroclaw::faults::Faults;
use zeroclaw::gateway::{self, Settings};
use zeroclaw::state::{Daemon, Flags, Paths};
use zeroclaw::store::Store;

const TOKEN: &str = "zc_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A daemon (no local endpoint) with its gateway on an OS-chosen port.
struct InProcess {
    daemon: Arc<Daemon>,
    port: u16,
    _dir: common::TestDir,
}

async fn start(settings: Settings) -> InProcess {
    let dir = common::TestDir::new();
    let extra = format!("paired_tokens = [\"{}\"]", token_digest(TOKEN));
    gateway_support::write_gateway_config(&dir, 1, &extra);
    let cfg = dir.config_dir();
    let (store, mut config) = ConfigStore::open(&cfg).expect("opening the config");
    config.gateway.port = 0;
    let data = cfg.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let faults = Arc::new(Faults::default());
    let db = Store::open(&data, faults.clone())
        .await
        .expect("opening the store");
    let paths = Paths {
        config_dir: cfg.clone(),
        config_file: cfg.join("config.toml"),
        data_dir: data,
        endpoint: "(none)".into(),
    };
    let daemon = Daemon::new(paths, (store, config), db, faults, None, Flags::default());
    let gw = gateway::start(&daemon, settings)
        .await
        .expect("starting the gateway");
    InProcess {
        daemon,
        port: gw.local_addr.port(),
        _dir: dir,
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.daemon.stop.cancel();
        self.daemon.shutdown.cancel();
    }
}

impl InProcess {
    async fn ws(&self) -> Ws {
        let mut ws = Ws::connect(self.port).await;
        let v = ws.initialize(Some(TOKEN)).await;
        assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");
        ws
    }

    /// Waits until the daemon counts `n` connections.
    async fn wait_connections(&self, n: usize) {
        let deadline = Instant::now() + common::RECV_TIMEOUT;
        while self.daemon.connections() != n {
            assert!(
                Instant::now() < deadline,
                "{} connections, expected {n}",
                self.daemon.connections()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn short_heartbeat() -> Settings {
    Settings {
        ping_after: Duration::from_millis(400),
        close_after: Duration::from_millis(1000),
        ..Settings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_answers_the_ping_is_closed() {
    let gw = start(short_heartbeat()).await;
    let mut ws = gw.ws().await;
    assert_eq!(gw.daemon.connections(), 1);
    // Not reading: the client's library cannot answer the Ping.
    let start = Instant::now();
    gw.wait_connections(0).await;
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(1300), "closed after {took:?}");
    // What it finds when it reads again: the Ping, then Close 1011.
    match ws.next(common::RECV_TIMEOUT).await {
        Got::Close(Some(f)) => assert_eq!(u16::from(f.code), 1011, "{f:?}"),
        other => panic!("expected Close 1011, got {other:?}"),
    }
    assert_eq!(ws.pings, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_answers_pings_stays_connected() {
    let gw = start(short_heartbeat()).await;
    let mut ws = gw.ws().await;
    // Reading (so Pongs go back) for several heartbeat periods.
    match ws.next(Duration::from_millis(3000)).await {
        Got::Timeout => {}
        other => panic!("expected nothing but Pings, got {other:?}"),
    }
    assert!(ws.pings >= 2, "{} pings", ws.pings);
    let v = ws.call("status", json!({}), json!(1)).await;
    assert_eq!(v["result"]["connections"], 1, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_client_is_not_pinged() {
    let gw = start(short_heartbeat()).await;
    let mut ws = gw.ws().await;
    for i in 0..15 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let v = ws.call("status", json!({}), json!(i)).await;
        assert_eq!(v["id"], i, "{v}");
    }
    assert_eq!(ws.pings, 0);
}

/// Reads until end of stream; `Err` if nothing ends it within `timeout`.
fn read_to_eof(s: &mut TcpStream, timeout: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(start.elapsed()),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(start.elapsed()),
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_must_arrive_within_its_deadline() {
    let gw = start(Settings {
        head_timeout: Duration::from_millis(300),
        ..Settings::default()
    })
    .await;
    // Silent, and stalled in the middle of the request line.
    let connected = Instant::now();
    let mut silent = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    let mut partial = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    std::io::Write::write_all(&mut partial, b"GET /ws HTTP/1.1\r\nHost: x\r\n").unwrap();
    for s in [&mut silent, &mut partial] {
        read_to_eof(s, Duration::from_secs(5)).expect("still open after 5 s");
        let took = connected.elapsed();
        assert!(took >= Duration::from_millis(250), "closed after {took:?}");
    }
    // An upgraded session is past its handshake: the deadline does not apply.
    let mut ws = gw.ws().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let v = ws.call("status", json!({}), json!(1)).await;
    assert!(v.get("result").is_some(), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_bound_the_oldest_waiting_connection_is_evicted_not_the_newcomer() {
    let gw = start(Settings {
        max_handshakes: 2,
        ..Settings::default()
    })
    .await;
    let mut a = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    let mut b = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    // Both are in before the third arrives.
    std::thread::sleep(Duration::from_millis(100));
    let port = gw.port;
    // The newcomer is served; the oldest silent one was evicted for it.
    let page = tokio::task::spawn_blocking(move || {
        gateway_support::http(
            port,
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .status
    })
    .await
    .unwrap();
    assert_eq!(page, 200);
    read_to_eof(&mut a, Duration::from_secs(5)).expect("the oldest was not evicted");
    assert!(read_to_eof(&mut b, Duration::from_millis(200)).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_over_its_own_bound_loses_its_own_oldest() {
    let gw = start(Settings {
        max_handshakes_per_source: 2,
        ..Settings::default()
    })
    .await;
    let mut a = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    // Another loopback address is the same source.
    let b = std::net::TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind("127.0.0.9:0".parse().unwrap()).unwrap();
    let _c = sock
        .connect(([127, 0, 0, 1], gw.port).into())
        .await
        .unwrap();
    read_to_eof(&mut a, Duration::from_secs(5)).expect("the oldest was not evicted");
    let mut b = b;
    assert!(read_to_eof(&mut b, Duration::from_millis(200)).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_that_binds_no_token_in_time_is_closed() {
    let gw = start(Settings {
        bind_timeout: Duration::from_millis(300),
        ..Settings::default()
    })
    .await;
    let started = Instant::now();
    let mut stranger = Ws::connect(gw.port).await;
    let mut paired = gw.ws().await;
    let close = stranger
        .expect_close(Duration::from_secs(5))
        .await
        .expect("a Close frame with a code");
    assert_eq!(u16::from(close.code), 1008, "{close:?}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    // A wrong token does not count as bound.
    let mut wrong = Ws::connect(gw.port).await;
    let v = wrong.initialize(Some("zc_nope")).await;
    assert!(v.get("error").is_some(), "{v}");
    let close = wrong
        .expect_close(Duration::from_secs(5))
        .await
        .expect("a Close frame");
    assert_eq!(u16::from(close.code), 1008, "{close:?}");
    // The bound one stays.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let v = paired.call("status", json!({}), json!(1)).await;
    assert!(v.get("result").is_some(), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_session_bound_refuses_upgrades_but_never_the_page() {
    let gw = start(Settings {
        max_sessions: 1,
        ..Settings::default()
    })
    .await;
    let mut first = gw.ws().await;
    let port = gw.port;
    let (page, upgrade) = tokio::task::spawn_blocking(move || {
        let page = gateway_support::http(
            port,
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .status;
        let upgrade = gateway_support::http(port, "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").status;
        (page, upgrade)
    })
    .await
    .unwrap();
    assert_eq!(page, 200);
    assert_eq!(upgrade, 503);
    let v = first.call("status", json!({}), json!(1)).await;
    assert!(v.get("result").is_some(), "{v}");
    first.inner.close(None).await.unwrap();
    drop(first);
    gw.wait_connections(0).await;
    let mut second = gw.ws().await;
    let v = second.call("status", json!({}), json!(2)).await;
    assert!(v.get("result").is_some(), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lockout_ends_after_its_period() {
    let gw = start(Settings {
        pairing_lockout: Duration::from_millis(700),
        ..Settings::default()
    })
    .await;
    let port = gw.port;
    let answers = tokio::task::spawn_blocking(move || {
        let mut statuses: Vec<u16> = (0..6)
            .map(|_| post_pair(port, Some("123456")).status)
            .collect();
        std::thread::sleep(Duration::from_millis(800));
        statuses.push(post_pair(port, Some("123456")).status);
        statuses
    })
    .await
    .unwrap();
    // A token is paired, so no code exists: every attempt fails (403) and counts.
    assert_eq!(answers, vec![403, 403, 403, 403, 403, 429, 403]);
}
