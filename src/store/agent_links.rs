//! `agent_session_links` (migration 2): which ACP session of a hosted agent
//! (`backend = "acp"`) holds the agent-side context of each of our sessions,
//! and how many times that context was lost (docs/agents.md).

use sqlx::{Row, Sqlite, Transaction};

use super::{utc_now, Store, StoreError};

/// One session's link to its agent-side session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentLink {
    /// The agent alias that created the agent session.
    pub agent_alias: String,
    /// The agent's ACP session id.
    pub agent_session_id: String,
    /// How often a new agent session replaced a linked one.
    pub context_losses: i64,
}

impl Store {
    /// The link of `session_id`, if it has one.
    pub async fn agent_link(&self, session_id: &str) -> Result<Option<AgentLink>, StoreError> {
        let row = sqlx::query(
            "SELECT agent_alias, agent_session_id, context_losses \
             FROM agent_session_links WHERE session_id = ?",
        )
        .bind(session_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(AgentLink {
                agent_alias: r.try_get(0)?,
                agent_session_id: r.try_get(1)?,
                context_losses: r.try_get(2)?,
            })
        })
        .transpose()
    }

    /// Links `session_id` to `agent_session_id`. With `lost_context`, an
    /// earlier link was replaced by a new agent session: counted.
    pub async fn agent_link_set(
        &self,
        session_id: &str,
        agent_alias: &str,
        agent_session_id: &str,
        lost_context: bool,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO agent_session_links \
               (session_id, agent_alias, agent_session_id, context_losses, updated_at) \
             VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (session_id) DO UPDATE SET agent_alias = excluded.agent_alias, \
               agent_session_id = excluded.agent_session_id, \
               context_losses = context_losses + excluded.context_losses, \
               updated_at = excluded.updated_at",
        )
        .bind(session_id)
        .bind(agent_alias)
        .bind(agent_session_id)
        .bind(i64::from(lost_context))
        .bind(utc_now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// Removes `session_id`'s link inside a deleting transaction.
pub(super) async fn delete_in(
    tx: &mut Transaction<'static, Sqlite>,
    session_id: &str,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM agent_session_links WHERE session_id = ?")
        .bind(session_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::testing::TempDir;
    use super::*;

    #[tokio::test]
    async fn a_link_is_set_replaced_counted_and_deleted_with_its_session() {
        let dir = TempDir::new("links");
        let store = Store::open(dir.path(), Arc::default()).await.unwrap();
        assert_eq!(store.agent_link("s").await.unwrap(), None);
        store.agent_link_set("s", "a", "x-1", false).await.unwrap();
        store.agent_link_set("s", "a", "x-2", true).await.unwrap();
        let link = store.agent_link("s").await.unwrap().unwrap();
        assert_eq!(
            link,
            AgentLink {
                agent_alias: "a".into(),
                agent_session_id: "x-2".into(),
                context_losses: 1
            }
        );
        store.durable_create("s", "a", "me", "/w").await.unwrap();
        assert!(store.durable_delete("s").await.unwrap());
        assert_eq!(store.agent_link("s").await.unwrap(), None);
    }
}
