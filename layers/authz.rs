//! The authorization gate (§6.4, §6.5): before every request but
//! `initialize`, make sure the binding still holds under the current policy,
//! then check the method's grant (or admin) for the bound principal.
//!
//! The policy check costs one atomic load when nothing changed; a moved
//! generation replays the connection's original credential against the new
//! policy, so established connections see changes at their next request.

use std::sync::Arc;

use tower::Service;

use super::{Inner, ReplyFuture};
use crate::authz::{require_grant, AuthzState};
use crate::conn_state::Conn;
use crate::error::{AuthReason, Forbidden, RpcError};
use crate::methods::Access;
use crate::request::Request;

connection_layer! {
    /// Adds the authorization gate of one connection.
    AuthzLayer;
    /// The gate of `conn` under the daemon's live `state`.
    new;
    /// The authorization gate.
    Authz { conn: Conn, state: Arc<AuthzState> }
}

impl<S: Inner> Service<Request> for Authz<S> {
    gate_service_head!();

    fn call(&mut self, mut req: Request) -> Self::Future {
        let access = req.method.access;
        if access == Access::Handshake {
            return self.inner.call(req);
        }
        let Some(bound) = req.binding.as_ref() else {
            return ReplyFuture::reject(RpcError::Auth(AuthReason::NotInitialized));
        };
        // A binding of the current policy generation passes as it is (the
        // common case: no clone); an older one is re-resolved.
        let renewed = match self.conn.refresh_binding_if_stale(&self.state, bound) {
            Ok(renewed) => renewed,
            Err(e) => return ReplyFuture::reject(e),
        };
        if let Some(b) = renewed {
            req.binding = Some(b);
        }
        let Some(binding) = req.binding.as_ref() else {
            return ReplyFuture::reject(RpcError::Auth(AuthReason::NotInitialized));
        };
        let principal = &binding.principal;
        let denied = match access {
            Access::Grant(g) => require_grant(principal, g, req.method.name)
                .err()
                .map(|why| (why, g.0.as_str(), g.1.as_str())),
            Access::Admin if !principal.admin => Some((
                Forbidden::AdminOnly {
                    method: req.method.name.to_owned(),
                },
                "admin",
                "admin",
            )),
            _ => None,
        };
        if let Some((why, resource, verb)) = denied {
            tracing::info!(
                event = "authorization_denied",
                peer = %self.conn.peer.label,
                principal_id = %principal.id,
                method = req.method.name,
                resource,
                verb,
            );
            return ReplyFuture::reject(RpcError::Forbidden(why));
        }
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{Binding, Credential, Policy, Principal};
    use crate::config::{AgentSelector, Config, Grant, GrantSet, Resource, Verb};
    use crate::jsonrpc::Payload;

    fn policy(trust_daemon_uid: bool) -> Policy {
        let mut c: Config = Config::from_toml_str("schema_version = 1").unwrap();
        c.security.trust_daemon_uid = trust_daemon_uid;
        Policy::from_config(&c)
    }
    use crate::layers::testing::{conn, mock_inner, request};
    use tower::ServiceExt;

    fn bound(conn: &Conn, principal: Principal, credential: Credential) -> Arc<Binding> {
        let b = Arc::new(Binding {
            principal: Arc::new(principal),
            generation: 1,
            credential,
        });
        conn.set_binding(Some(b.clone()));
        b
    }

    fn with_binding(method: &str, b: &Arc<Binding>) -> Request {
        let mut r = request(method);
        r.binding = Some(b.clone());
        r
    }

    #[tokio::test]
    async fn grants_admin_only_and_ordering() {
        let conn = conn();
        let state = Arc::new(AuthzState::new(policy(true), vec![], Some(0)));
        let (svc, mut handle) = mock_inner();
        let mut gate = tower::ServiceBuilder::new()
            .layer(AuthzLayer::new(conn.clone(), state))
            .service(svc);
        handle.allow(10);
        let mut grants = GrantSet::default();
        grants.insert(Grant(Resource::System, Verb::Read));
        let b = bound(
            &conn,
            Principal {
                id: "user:u".into(),
                admin: false,
                grants,
                allowed_agents: AgentSelector::All,
                write_paths: vec![],
            },
            Credential::Uid(0),
        );

        gate.ready().await.unwrap();
        let err = gate.call(with_binding("config/set", &b)).await.unwrap_err();
        assert_eq!(err.code(), -32012);
        assert_eq!(
            err.to_string(),
            "Principal is not granted config:update (required by config/set)"
        );
        gate.ready().await.unwrap();
        let err = gate
            .call(with_binding("pairing/list", &b))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Principal is not an admin (required by pairing/list)"
        );

        // A granted method reaches the service, which saw nothing of the denials.
        gate.ready().await.unwrap();
        let fut = gate.call(with_binding("status", &b));
        let (req, send) = handle.next_request().await.unwrap();
        assert_eq!(req.method.name, "status");
        send.send_response(Payload::empty_object());
        fut.await.unwrap();
    }

    #[tokio::test]
    async fn a_policy_change_revokes_at_the_next_request() {
        let conn = conn();
        let state = Arc::new(AuthzState::new(policy(true), vec![], Some(0)));
        let (svc, mut handle) = mock_inner();
        let mut gate = tower::ServiceBuilder::new()
            .layer(AuthzLayer::new(conn.clone(), state.clone()))
            .service(svc);
        handle.allow(10);
        let b = bound(&conn, Principal::shared_operator(), Credential::Uid(0));
        state.install(policy(false), vec![]);
        gate.ready().await.unwrap();
        let err = gate.call(with_binding("status", &b)).await.unwrap_err();
        assert_eq!(
            err.data()
                .map(|d| serde_json::to_string(&d).unwrap())
                .as_deref(),
            Some(r#"{"reason":"revoked"}"#)
        );
        assert!(conn.binding().is_none(), "the binding is dropped");
    }

    #[tokio::test]
    async fn a_revoked_token_fails_with_token_revoked() {
        let conn = conn();
        let state = Arc::new(AuthzState::new(policy(true), vec!["d".into()], None));
        let (svc, _handle) = mock_inner();
        let mut gate = tower::ServiceBuilder::new()
            .layer(AuthzLayer::new(conn.clone(), state.clone()))
            .service(svc);
        let b = bound(
            &conn,
            Principal::shared_operator(),
            Credential::Token("d".into()),
        );
        state.install(policy(true), vec![]);
        gate.ready().await.unwrap();
        let err = gate.call(with_binding("status", &b)).await.unwrap_err();
        assert_eq!(err, RpcError::Auth(AuthReason::TokenRevoked));
    }
}
