//! Who may act on a session (§6.6): its owner or an admin, and only with an
//! agent the principal's selector allows. Shared by the lifecycle, attach
//! and uploads.

use std::sync::Arc;

use super::{Session, Sessions};
use crate::config::Principal;
use crate::error::{Forbidden, RpcError};

/// The live session `id` as `principal` may act on it: live (nothing is
/// rehydrated), then owned, then its agent allowed, in that order, the one
/// that decides which error a request gets (`session/attach`, and a file's
/// target, §8.17, §8.18.1).
pub fn live_for(
    sessions: &Sessions,
    principal: &Principal,
    id: &str,
) -> Result<Arc<Session>, RpcError> {
    let s = sessions.get(id).ok_or_else(RpcError::session_not_found)?;
    check_owner(principal, &s.owner)?;
    check_agent(principal, &s.agent_alias)?;
    Ok(s)
}

/// Ownership (§6.6): admins pass, others must own.
pub fn check_owner(principal: &Principal, owner: &str) -> Result<(), RpcError> {
    if principal.admin || principal.id == owner {
        Ok(())
    } else {
        Err(RpcError::NotOwned)
    }
}

/// The agent selector (§6.6).
pub fn check_agent(principal: &Principal, alias: &str) -> Result<(), RpcError> {
    if principal.may_use_agent(alias) {
        Ok(())
    } else {
        Err(RpcError::Forbidden(Forbidden::Agent {
            alias: alias.to_owned(),
        }))
    }
}
