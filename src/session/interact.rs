//! What a client does to a running turn (§8.6, §8.12): cancel it, or answer
//! one of its approval requests. Both act on the live session only, for
//! its owner or an admin.

use super::access::check_owner;
use super::Sessions;
use crate::agent::ApprovalDecision;
use crate::config::Principal;
use crate::error::{ErrorData, Reason, RpcError};

impl Sessions {
    /// `session/cancel`: a soft cancel of live session `id`'s running turn;
    /// `-32000` `no_active_turn` when nothing runs (or no session is live).
    pub fn cancel_turn(&self, principal: &Principal, id: &str) -> Result<(), RpcError> {
        let no_turn = || RpcError::SessionNotFound {
            message: "No active turn for this session".into(),
            data: Some(ErrorData::reason(Reason::NoActiveTurn)),
        };
        let s = self.get(id).ok_or_else(no_turn)?;
        check_owner(principal, &s.owner)?;
        if !s.soft_cancel() {
            return Err(no_turn());
        }
        Ok(())
    }

    /// `session/approve`: `decision` for approval request `request_id` of
    /// live session `id`; whether a pending request took it.
    pub fn approve(
        &self,
        principal: &Principal,
        id: &str,
        request_id: &str,
        decision: ApprovalDecision,
    ) -> Result<bool, RpcError> {
        let s = self.get(id).ok_or_else(RpcError::session_not_found)?;
        check_owner(principal, &s.owner)?;
        Ok(s.decide(request_id, decision))
    }
}
