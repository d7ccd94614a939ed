//! `health` (protocol addition, zerocode's status bar): liveness and the
//! state of what the daemon depends on — the session store answers a read
//! within a bound, and how many log lines were lost (logging is best
//! effort: docs/reliability.md).

use std::time::Duration;

use serde_json::{json, Value};

use super::Daemon;

/// How long the store may take to answer the probe.
const STORE_PROBE: Duration = Duration::from_secs(2);

impl Daemon {
    /// The `health` result.
    pub async fn health(&self) -> Value {
        let store = match tokio::time::timeout(STORE_PROBE, self.sessions.store.chat_list(1)).await
        {
            Ok(Ok(_)) => json!({"status": "ok"}),
            Ok(Err(e)) => json!({"status": "error", "error": e.to_string()}),
            Err(_) => json!({"status": "error", "error": "no answer within 2 s"}),
        };
        let ok = store["status"] == "ok";
        json!({
            "status": if ok { "ok" } else { "degraded" },
            "uptime_secs": self.uptime.secs(),
            "connections": self.connections(),
            "live_sessions": self.sessions.count(),
            "session_store": store,
            "logging": {"dropped_lines": crate::logging::dropped_lines()},
        })
    }
}
