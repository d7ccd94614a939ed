//! Who may act on a session (§6.6): its owner or an admin, and only with an
//! agent the principal's selector allows. Shared by the lifecycle, attach
//! and uploads.

use crate::config::Principal;
use crate::error::{Forbidden, RpcError};

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
