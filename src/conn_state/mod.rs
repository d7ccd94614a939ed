//! What one connection knows about itself, shared by its reader, its writer,
//! its in-flight requests and the sessions it is the channel of.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::authz::{AuthzState, Binding};
use crate::dialect::Dialect;
use crate::error::RpcError;
use crate::outbound::Outbound;
use crate::peer::PeerRequests;

mod in_flight;
pub use in_flight::{Hold, InFlight};

/// Which transport carries the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Unix socket or named pipe.
    Local,
    /// The WebSocket gateway.
    Wss,
    /// One `POST /rpc` request of the gateway: no channel after the answer.
    Http,
}

impl Transport {
    /// The `transport` member of the `initialize` result.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Wss => "wss",
            Self::Http => "http",
        }
    }
}

pub use crate::endpoint::PeerInfo;

/// The shared state of one connection.
#[derive(Debug)]
pub struct ConnCtx {
    /// Daemon-unique connection number (for logs).
    pub id: u64,
    pub peer: PeerInfo,
    pub transport: Transport,
    /// Outbound frames.
    pub outbound: Outbound,
    /// Daemon→client requests awaiting answers.
    pub peer_requests: PeerRequests,
    /// Requests in flight (§4).
    pub in_flight: InFlight,
    /// Cancelled when the connection must close.
    pub closed: CancellationToken,
    /// Cancelled when the client can no longer send (end of input, or closed):
    /// it can answer nothing more on this connection.
    pub input_closed: CancellationToken,
    binding: Mutex<Option<Arc<Binding>>>,
    /// Set when a policy change revoked the binding (`state::revocation`):
    /// the connection hears nothing more from any session and its answers
    /// to the daemon's requests are dropped until an `initialize` binds it
    /// again. Its next request still gets the revocation error of §6.5.
    cut: AtomicBool,
    /// Bumped under the binding's lock at each change of it.
    binding_changes: AtomicU64,
    dialect: AtomicU8,
    elicitation: AtomicBool,
}

impl ConnCtx {
    /// A fresh, unbound connection.
    pub fn new(
        id: u64,
        peer: PeerInfo,
        transport: Transport,
        outbound: Outbound,
        closed: CancellationToken,
    ) -> Self {
        Self {
            id,
            peer,
            transport,
            outbound,
            peer_requests: PeerRequests::default(),
            in_flight: InFlight::default(),
            input_closed: closed.child_token(),
            closed,
            binding: Mutex::new(None),
            cut: AtomicBool::new(false),
            binding_changes: AtomicU64::new(0),
            dialect: AtomicU8::new(Dialect::Camel.as_u8()),
            elicitation: AtomicBool::new(false),
        }
    }

    /// The current binding, if `initialize` succeeded and it was not dropped.
    pub fn binding(&self) -> Option<Arc<Binding>> {
        self.binding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The binding as `copy` last read it, read again only if it changed
    /// since: one atomic load per request instead of a lock.
    pub fn current_binding<'c>(&self, copy: &'c mut BindingCopy) -> Option<&'c Arc<Binding>> {
        // The count is read before the binding: a change in between is
        // seen again on the next call, never missed.
        let changes = self.binding_changes.load(Ordering::Acquire);
        if changes != copy.changes {
            copy.binding = self.binding();
            copy.changes = changes;
        }
        copy.binding.as_ref()
    }

    /// Replaces (or, with `None`, drops) the binding. A new binding ends a cut.
    pub fn set_binding(&self, binding: Option<Arc<Binding>>) {
        let mut b = self.binding.lock().unwrap_or_else(|p| p.into_inner());
        if binding.is_some() {
            self.cut.store(false, Ordering::Release);
            self.peer_requests.resume();
        }
        *b = binding;
        self.binding_changes.fetch_add(1, Ordering::Release);
    }

    /// Whether sessions may still send to this connection: open, and not
    /// cut off by a revocation.
    pub fn hears(&self) -> bool {
        !self.closed.is_cancelled() && !self.cut.load(Ordering::Acquire)
    }

    /// Cuts the connection off after its binding was revoked: sessions stop
    /// sending to it, and the daemon's requests waiting on it fail at once
    /// (no answer from it reaches an agent). The binding stays until the
    /// next request, which is refused as §6.5 says.
    pub fn cut_off(&self) {
        self.cut.store(true, Ordering::Release);
        self.peer_requests.suspend();
    }

    /// Whether an answer to the daemon's request may be taken from this
    /// connection: the same check a request passes (its binding still
    /// holds under the current policy), and the connection is not cut off.
    pub fn may_answer(&self, authz: &AuthzState) -> bool {
        if self.cut.load(Ordering::Acquire) {
            return false;
        }
        match self.binding() {
            Some(b) => authz.renew(&b).is_ok(),
            None => true,
        }
    }

    /// `binding` under the current policy (§6.5 steps 1–2): unchanged when
    /// the generation did not move, else renewed on this connection; one
    /// that no longer resolves to the same principal is dropped from it.
    pub fn refresh_binding(
        &self,
        authz: &AuthzState,
        binding: &Arc<Binding>,
    ) -> Result<Arc<Binding>, RpcError> {
        Ok(self
            .refresh_binding_if_stale(authz, binding)?
            .unwrap_or_else(|| binding.clone()))
    }

    /// [`ConnCtx::refresh_binding`], answering `None` when `binding` is current.
    pub fn refresh_binding_if_stale(
        &self,
        authz: &AuthzState,
        binding: &Arc<Binding>,
    ) -> Result<Option<Arc<Binding>>, RpcError> {
        match authz.renew(binding) {
            Ok(Some(renewed)) => {
                self.replace_binding_if(binding, renewed.clone());
                Ok(Some(renewed))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                tracing::info!(
                    event = "binding_dropped",
                    peer = %self.peer.label,
                    principal_id = %binding.principal.id,
                    reason = if matches!(e, RpcError::Auth(_)) { "token_revoked" } else { "revoked" },
                );
                self.drop_binding_if(binding);
                Err(e)
            }
        }
    }

    /// Drops the binding only if it is still `expected` (a concurrent `initialize` wins).
    fn drop_binding_if(&self, expected: &Arc<Binding>) {
        self.swap_binding_if(expected, None);
    }

    /// Replaces the binding only if it is still `expected`.
    fn replace_binding_if(&self, expected: &Arc<Binding>, new: Arc<Binding>) {
        self.swap_binding_if(expected, Some(new));
    }

    fn swap_binding_if(&self, expected: &Arc<Binding>, new: Option<Arc<Binding>>) {
        let mut b = self.binding.lock().unwrap_or_else(|p| p.into_inner());
        if b.as_ref().is_some_and(|cur| Arc::ptr_eq(cur, expected)) {
            *b = new;
            self.binding_changes.fetch_add(1, Ordering::Release);
        }
    }

    /// The connection's wire dialect.
    pub fn dialect(&self) -> Dialect {
        Dialect::from_u8(self.dialect.load(Ordering::Relaxed))
    }

    /// Sets the dialect (by a successful `initialize`).
    pub fn set_dialect(&self, d: Dialect) {
        self.dialect.store(d.as_u8(), Ordering::Relaxed);
    }

    /// Whether the client advertised `elicitation` support.
    pub fn supports_elicitation(&self) -> bool {
        self.elicitation.load(Ordering::Relaxed)
    }

    /// Records the client's elicitation capability.
    pub fn set_elicitation(&self, yes: bool) {
        self.elicitation.store(yes, Ordering::Relaxed);
    }

    /// The principal id for audit logs (`-` while unbound).
    pub fn principal_id(&self) -> String {
        self.binding()
            .map(|b| b.principal.id.clone())
            .unwrap_or_else(|| "-".to_owned())
    }
}

/// One reader's copy of a connection's binding ([`ConnCtx::current_binding`]).
#[derive(Debug, Clone, Default)]
pub struct BindingCopy {
    changes: u64,
    binding: Option<Arc<Binding>>,
}

/// Shorthand for the shared handle.
pub type Conn = Arc<ConnCtx>;
