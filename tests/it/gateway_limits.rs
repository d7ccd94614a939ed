//! §12 timings and bounds, on a gateway started in process with short
//! intervals (`gateway::Settings`, a constructor parameter: no config key
//! changes them): the heartbeat, the handshake deadline, the handshake and
//! session bounds (excess sockets closed at accept), and the end of a
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
async fn the_handshake_must_finish_within_its_deadline() {
    let gw = start(Settings {
        handshake_timeout: Duration::from_millis(300),
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
async fn excess_handshakes_are_closed_at_accept() {
    let gw = start(Settings {
        max_handshakes: 2,
        ..Settings::default()
    })
    .await;
    let mut a = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    let _b = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    let mut c = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    read_to_eof(&mut c, Duration::from_secs(5)).expect("the third handshake was not refused");
    // The first two are still waiting for their requests.
    assert!(read_to_eof(&mut a, Duration::from_millis(200)).is_err());
    // Once one leaves, there is room again.
    drop(a);
    let deadline = Instant::now() + common::RECV_TIMEOUT;
    loop {
        let mut d = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
        if read_to_eof(&mut d, Duration::from_millis(100)).is_err() {
            break;
        }
        assert!(Instant::now() < deadline, "no room after a handshake left");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn excess_sessions_are_closed_at_accept() {
    let gw = start(Settings {
        max_sessions: 1,
        ..Settings::default()
    })
    .await;
    let mut first = gw.ws().await;
    let mut refused = TcpStream::connect(("127.0.0.1", gw.port)).unwrap();
    read_to_eof(&mut refused, Duration::from_secs(5)).expect("a second session was admitted");
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
