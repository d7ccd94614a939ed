//! The store as the ACP backend's [`LinkStore`] (its session ↔ agent
//! session links, migration 2).

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use crate::agent::{AcpLink, LinkStore};
use crate::store::Store;

impl LinkStore for Store {
    fn get<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<AcpLink>, String>> {
        async move {
            let link = self
                .agent_link(session_id)
                .await
                .map_err(|e| e.to_string())?;
            Ok(link.map(|l| AcpLink {
                agent_alias: l.agent_alias,
                agent_session_id: l.agent_session_id,
            }))
        }
        .boxed()
    }

    fn set<'a>(
        &'a self,
        session_id: &'a str,
        agent_alias: &'a str,
        agent_session_id: &'a str,
        lost_context: bool,
    ) -> BoxFuture<'a, Result<(), String>> {
        async move {
            self.agent_link_set(session_id, agent_alias, agent_session_id, lost_context)
                .await
                .map_err(|e| e.to_string())
        }
        .boxed()
    }
}
