//! Transport restriction (§3.5 step 2, §8.18): local-only methods
//! answer `-32012` `local_only` on a WebSocket connection, and methods that
//! need a connection that stays open answer `-32012` `channel_required` on
//! `POST /rpc` (docs/gateway.md), before the handshake gate, so the answer
//! does not depend on the connection's state.

use tower::Service;

use super::{Inner, ReplyFuture};
use crate::conn_state::Transport;
use crate::error::{Forbidden, RpcError};
use crate::request::Request;

connection_layer! {
    /// Adds the local-only check for connections of `transport`.
    LocalityLayer;
    /// The check for one connection's transport.
    new;
    /// The local-only check.
    Locality { transport: Transport }
}

impl<S: Inner> Service<Request> for Locality<S> {
    gate_service_head!();

    fn call(&mut self, req: Request) -> Self::Future {
        if req.method.local_only() && self.transport != Transport::Local {
            return ReplyFuture::reject(RpcError::Forbidden(Forbidden::LocalOnly {
                method: req.method.name.to_owned(),
            }));
        }
        if req.method.needs_channel() && self.transport == Transport::Http {
            return ReplyFuture::reject(RpcError::Forbidden(Forbidden::ChannelRequired {
                method: req.method.name.to_owned(),
            }));
        }
        self.inner.call(req)
    }
}
