//! Where a session's link to its agent-side ACP session is kept: a handle
//! the runtime passes in (the store ranks above the agents, so the agents
//! name no store type: src/architecture_tests/).

use futures_util::future::BoxFuture;

/// One session's link (the store's `agent_session_links` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The alias that created the agent session.
    pub agent_alias: String,
    /// The agent's ACP session id.
    pub agent_session_id: String,
}

/// Reads and records links; errors are sentences for the turn's failure.
pub trait LinkStore: Send + Sync {
    /// The link of `session_id`, if any.
    fn get<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<Link>, String>>;
    /// Links `session_id` to `agent_session_id`; `lost_context` when it
    /// replaces an earlier link (the agent's own context of it is gone).
    fn set<'a>(
        &'a self,
        session_id: &'a str,
        agent_alias: &'a str,
        agent_session_id: &'a str,
        lost_context: bool,
    ) -> BoxFuture<'a, Result<(), String>>;
}
