//! The effective config as reads show it (§8.14): the running config's
//! JSON with secrets masked and every agent's working directory filled in.
//! `config/get` and the addition `config/list` both read this one view.

use std::path::Path;

use serde_json::Value;

use super::LiveConfig;
use crate::config::{effective_json, Config};

impl LiveConfig {
    /// The whole effective config of §8.14; `config_dir` is where an agent
    /// without `workspace_dir` works (§10.2).
    pub fn effective_view(&self, config_dir: &Path) -> Value {
        let running = self.current();
        let mut tree = effective_json(&running);
        fill_workspaces(&mut tree, &running, config_dir);
        tree
    }
}

/// §8.14 shows the *effective* config: an agent without `workspace_dir`
/// shows where its sessions actually work (§10.2), not `null`.
fn fill_workspaces(tree: &mut Value, running: &Config, config_dir: &Path) {
    let Some(Value::Object(agents)) = tree.get_mut("agents") else {
        return;
    };
    for (alias, agent) in agents.iter_mut() {
        if let Some(slot @ Value::Null) = agent.get_mut("workspace_dir") {
            let dir = running.agent_workspace_dir(config_dir, alias);
            *slot = Value::from(dir.to_string_lossy().into_owned());
        }
    }
}
