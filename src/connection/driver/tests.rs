//! The driver over a recording wire: how answers to pipelined frames are
//! cut into writes.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{drive, ConnectionEnd, EARLY_WRITE};
use crate::codec::Frame;
use crate::config::ConfigStore;
use crate::conn_state::{PeerInfo, Transport};
use crate::connection::new_conn;
use crate::connection::wire::{Inbound, Wire};
use crate::faults::Faults;
use crate::state::{Daemon, Flags, Paths};
use crate::store::Store;

/// Inbound frames all readable at once; every write taken whole and recorded.
struct Recording {
    inbound: VecDeque<String>,
    writes: Vec<Vec<u8>>,
}

impl Wire for Recording {
    fn poll_inbound(&mut self, _cx: &mut Context<'_>) -> Poll<Inbound> {
        Poll::Ready(match self.inbound.pop_front() {
            Some(line) => Inbound::Frame(Frame::Line(line)),
            None => Inbound::End,
        })
    }

    fn poll_write(&mut self, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.writes.push(buf.to_vec());
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_close(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

async fn daemon(dir: &std::path::Path) -> Arc<Daemon> {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let config = ConfigStore::open(dir).unwrap();
    let faults = Arc::new(Faults::default());
    let store = Store::open(&data, faults.clone()).await.unwrap();
    let paths = Paths {
        config_dir: dir.to_path_buf(),
        config_file: dir.join("config.toml"),
        endpoint: data.join("daemon.sock").to_string_lossy().into_owned(),
        data_dir: data,
    };
    Daemon::new(paths, config, store, faults, own_uid(), Flags::default())
}

/// This process is the daemon and its peer: the shared operator.
#[cfg(unix)]
fn own_uid() -> Option<u32> {
    // SAFETY: getuid never fails.
    Some(unsafe { libc::getuid() })
}

#[cfg(not(unix))]
fn own_uid() -> Option<u32> {
    None
}

fn peer() -> PeerInfo {
    #[cfg(unix)]
    return PeerInfo::unix(own_uid().unwrap_or(0), Some(std::process::id()));
    #[cfg(not(unix))]
    return PeerInfo::pipe(Some(std::process::id()));
}

/// 200 `status` frames readable at once: the first answers are written as
/// soon as `EARLY_WRITE` bytes of them are ready, not after the whole
/// batch, and every answer is written once, in order.
#[tokio::test]
async fn answers_to_a_pipelined_batch_leave_in_early_writes_in_order() {
    let dir = std::env::temp_dir().join(format!("zc-driver-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let daemon = daemon(&dir).await;
    let mut inbound = VecDeque::from([
        r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":0}"#
            .to_owned(),
    ]);
    inbound
        .extend((1..=200).map(|id| format!(r#"{{"jsonrpc":"2.0","method":"status","id":{id}}}"#)));
    let mut wire = Recording {
        inbound,
        writes: Vec::new(),
    };
    let (conn, queue) = new_conn(1, peer(), Transport::Local);
    let end = drive(&daemon, &conn, queue, &mut wire).await;
    assert_eq!(end, ConnectionEnd::Finished);

    let ids: Vec<u64> = wire
        .writes
        .concat()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            assert!(v.get("result").is_some(), "{v}");
            v["id"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(ids, (0..=200).collect::<Vec<u64>>());
    let first = wire.writes[0].len();
    let one_answer = wire.writes.concat().len() / 201;
    assert!(
        (EARLY_WRITE..EARLY_WRITE + 2 * one_answer).contains(&first),
        "first write {first} bytes, answers ~{one_answer} bytes each"
    );
    assert!(
        wire.writes.len() > 200 * one_answer / EARLY_WRITE,
        "{} writes",
        wire.writes.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
