//! Daemon→client requests (§3.6): the per-connection `zc-out-<n>`
//! counter and the map of requests awaiting an answer.
//!
//! Correlation is directional: only responses are matched here, and only
//! against ids this daemon issued on this connection, so a client request
//! whose id is `"zc-out-0"` is still just a request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::jsonrpc::request_frame;
use crate::limits::MAX_PENDING_PEER_REQUESTS;
use crate::outbound::Outbound;

/// How the client answered.
#[derive(Debug)]
pub enum PeerReply {
    /// `result` (an explicit `null` included).
    Result(Box<RawValue>),
    /// `error` (the whole error object).
    Error(Box<RawValue>),
}

/// Why a daemon→client request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    #[error("too many daemon requests pending on this connection")]
    TooManyPending,
    #[error("connection closed")]
    Closed,
    #[error("no answer in time")]
    Timeout,
}

#[derive(Debug, Default)]
struct Pending {
    next: u64,
    waiting: HashMap<u64, oneshot::Sender<PeerReply>>,
    closed: bool,
    /// The connection was cut off by a revocation: as closed until it binds again.
    suspended: bool,
}

/// The pending map of one connection.
#[derive(Debug, Default)]
pub struct PeerRequests {
    state: Mutex<Pending>,
}

impl PeerRequests {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // The map stays consistent even if a holder panicked: every mutation is one call.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `method` to the client and waits up to `timeout` for its answer.
    pub async fn request<P: Serialize + ?Sized>(
        &self,
        outbound: &Outbound,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<PeerReply, PeerError> {
        let (seq, rx) = {
            let mut st = self.lock();
            if st.closed || st.suspended {
                return Err(PeerError::Closed);
            }
            if st.waiting.len() >= MAX_PENDING_PEER_REQUESTS {
                return Err(PeerError::TooManyPending);
            }
            let seq = st.next;
            st.next += 1;
            let (tx, rx) = oneshot::channel();
            st.waiting.insert(seq, tx);
            (seq, rx)
        };
        // Removes the entry however this future ends (answer, timeout, drop).
        let _guard = Forget { map: self, seq };
        let frame = request_frame(method, params, seq).map_err(|_| PeerError::Closed)?;
        outbound.send(frame).await.map_err(|_| PeerError::Closed)?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(PeerError::Closed),
            Err(_) => Err(PeerError::Timeout),
        }
    }

    /// Resolves the pending request `id` names. `false` when nothing matches
    /// (unknown, answered, timed out, numeric or null ids): the caller logs
    /// `response_dropped` and never answers.
    pub fn resolve(&self, id: &str, reply: PeerReply) -> bool {
        let Some(seq) = parse_out_id(id) else {
            return false;
        };
        let Some(tx) = self.lock().waiting.remove(&seq) else {
            return false;
        };
        tx.send(reply).is_ok()
    }

    /// Fails every pending request at once and refuses new ones (connection closed).
    pub fn close(&self) {
        let mut st = self.lock();
        st.closed = true;
        st.waiting.clear();
    }

    /// Fails every pending request and refuses new ones until [`resume`](Self::resume).
    pub fn suspend(&self) {
        let mut st = self.lock();
        st.suspended = true;
        st.waiting.clear();
    }

    /// Takes requests again after [`suspend`](Self::suspend) (a new binding).
    pub fn resume(&self) {
        self.lock().suspended = false;
    }

    /// Requests awaiting an answer.
    pub fn pending(&self) -> usize {
        self.lock().waiting.len()
    }
}

struct Forget<'a> {
    map: &'a PeerRequests,
    seq: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.map.lock().waiting.remove(&self.seq);
    }
}

/// `"zc-out-<n>"` (as JSON text, escapes allowed) → n, in canonical decimal only.
fn parse_out_id(json: &str) -> Option<u64> {
    if !json.starts_with('"') {
        return None;
    }
    let s: std::borrow::Cow<'_, str> = serde_json::from_str(json).ok()?;
    let digits = s.strip_prefix("zc-out-")?;
    let n: u64 = digits.parse().ok()?;
    (n.to_string() == digits).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::write_queue;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn out_ids_parse_canonically() {
        assert_eq!(parse_out_id(r#""zc-out-0""#), Some(0));
        assert_eq!(parse_out_id(r#""zc-out-17""#), Some(17));
        assert_eq!(parse_out_id(r#""zc\u002dout-3""#), Some(3));
        for bad in [
            r#""zc-out-01""#,
            r#""zc-out-""#,
            r#""zc-out-+1""#,
            "0",
            "null",
            r#""x""#,
        ] {
            assert_eq!(parse_out_id(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn numbering_limit_and_resolution() {
        let (out, mut q) = {
            let (o, q) = write_queue(CancellationToken::new());
            (o, q)
        };
        let _ = &mut q;
        let peer = std::sync::Arc::new(PeerRequests::default());
        let mut tasks = Vec::new();
        for _ in 0..MAX_PENDING_PEER_REQUESTS {
            let (p, o) = (peer.clone(), out.clone());
            tasks.push(tokio::spawn(async move {
                p.request(
                    &o,
                    "elicitation/create",
                    &serde_json::json!({}),
                    Duration::from_secs(5),
                )
                .await
            }));
        }
        while peer.pending() < MAX_PENDING_PEER_REQUESTS {
            tokio::task::yield_now().await;
        }
        // The 17th fails inside the daemon and consumes no number.
        let err = peer
            .request(&out, "x", &(), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(err, PeerError::TooManyPending);
        let null = RawValue::from_string("null".into()).unwrap();
        assert!(peer.resolve(r#""zc-out-3""#, PeerReply::Result(null.clone())));
        assert!(!peer.resolve(r#""zc-out-3""#, PeerReply::Result(null.clone())));
        assert!(!peer.resolve("3", PeerReply::Result(null)));
        peer.close();
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap());
        }
        assert!(matches!(results[3], Ok(PeerReply::Result(ref r)) if r.get() == "null"));
        assert_eq!(
            results
                .iter()
                .filter(|r| matches!(r, Err(PeerError::Closed)))
                .count(),
            MAX_PENDING_PEER_REQUESTS - 1
        );
        // Numbers 0..16 were used: the next request after reopening is not possible (closed).
        assert_eq!(
            peer.request(&out, "x", &(), Duration::from_secs(1))
                .await
                .unwrap_err(),
            PeerError::Closed
        );
    }
}
