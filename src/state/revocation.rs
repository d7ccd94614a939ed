//! Revocation that cuts at once (docs/security.md, "Revocation").
//!
//! §6.5 has a connection see a policy change at its next request. A client
//! that only listens never sends one, so it would go on hearing every turn
//! of the sessions it joined, and its answer to a question already asked
//! would still reach the agent. So on every new policy generation (a token
//! revoked, a roster entry removed or changed, `trust_daemon_uid` turned
//! off) this sweeper replays each live connection's credential at once;
//! a connection it no longer binds to the same principal is cut off
//! (`ConnCtx::cut_off`) and forgotten by every session. Its next request
//! still gets the §6.5 error (`token_revoked` or `revoked`), and an
//! `initialize` with a credential that holds binds it again.

use std::sync::Arc;

use super::Daemon;
use crate::conn_state::Conn;
use crate::error::RpcError;

/// Starts the sweeper; it ends when the daemon shuts down.
pub fn spawn_sweeper(daemon: &Arc<Daemon>) {
    let mut changes = daemon.authz.subscribe();
    let weak = Arc::downgrade(daemon);
    let shutdown = daemon.shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                changed = changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
            }
            let Some(daemon) = weak.upgrade() else { break };
            sweep(&daemon);
        }
    });
}

/// Cuts off every live connection whose binding the current policy revokes.
pub fn sweep(daemon: &Daemon) {
    for conn in daemon.live_conns.snapshot() {
        let Some(binding) = conn.binding() else {
            continue;
        };
        if let Err(e) = daemon.authz.renew(&binding) {
            cut(daemon, &conn, &binding.principal.id, &e);
        }
    }
}

fn cut(daemon: &Daemon, conn: &Conn, principal_id: &str, why: &RpcError) {
    conn.cut_off();
    for session in daemon.sessions.all() {
        session.detach(conn.id);
    }
    let reason = if matches!(why, RpcError::Auth(_)) {
        "token_revoked"
    } else {
        "revoked"
    };
    tracing::info!(event = "connection_cut", conn = conn.id, peer = %conn.peer.label, principal_id, reason);
}
