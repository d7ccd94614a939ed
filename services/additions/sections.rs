//! `config/sections` and `config/templates` (protocol additions, for
//! zerocode's Config tab): the sections of our `config.toml` with a one-line
//! help and whether each is configured, and starter values for new map
//! entries. Both read the running config only.

use serde::Serialize;
use serde_json::{json, Value};

use crate::config::{Config, DaemonConfig, GatewayConfig, SecurityConfig};

/// One `config/sections` entry, in the shape zerocode decodes
/// (`ConfigSectionEntry`: `key`, `label`, `help`, `completed`, `group`, `shape`).
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Section {
    pub key: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    pub completed: bool,
    pub group: &'static str,
    /// `direct_form` (a table of fields) or `one_tier_alias_map` (named entries).
    pub shape: &'static str,
}

/// The sections of `config`, in file order.
pub fn sections(config: &Config) -> Vec<Section> {
    let form = "direct_form";
    let map = "one_tier_alias_map";
    vec![
        Section {
            key: "daemon",
            label: "Daemon",
            help: "Timeouts and idle limits of sessions, approvals, questions and uploads.",
            completed: config.daemon != DaemonConfig::default(),
            group: "Foundation",
            shape: form,
        },
        Section {
            key: "security",
            label: "Security",
            help: "Who the local socket trusts: the daemon's own uid, an extra socket group.",
            completed: config.security != SecurityConfig::default(),
            group: "Foundation",
            shape: form,
        },
        Section {
            key: "agents",
            label: "Agents",
            help: "The agents sessions run: the built-in echo agent or a local command.",
            completed: !config.agents.is_empty(),
            group: "Agent",
            shape: map,
        },
        Section {
            key: "gateway",
            label: "Gateway",
            help: "The HTTP/WebSocket gateway for remote clients: address, TLS, pairing.",
            completed: config.gateway.enabled || config.gateway != GatewayConfig::default(),
            group: "Network",
            shape: form,
        },
        Section {
            key: "users",
            label: "Users",
            help: "The roster: local uids and the permission profiles they are bound to.",
            completed: !config.users.is_empty(),
            group: "Operations",
            shape: map,
        },
        Section {
            key: "permission_profiles",
            label: "Permission profiles",
            help: "Named grant sets, agent selectors and config write paths for users.",
            completed: !config.permission_profiles.is_empty(),
            group: "Operations",
            shape: map,
        },
    ]
}

/// Starter entries for the three maps, as `config/set-many` props would set them.
pub fn templates() -> Value {
    json!({"templates": [
        {"path": "agents.<alias>", "name": "echo", "label": "Echo agent (built in)",
         "values": {"backend": "echo"}},
        {"path": "agents.<alias>", "name": "command", "label": "Command agent (a local program)",
         "values": {"backend": "command", "command": ["/bin/cat"], "input": "prompt", "timeout_secs": 600}},
        {"path": "users.<name>", "name": "user", "label": "User (a local uid)",
         "values": {"uid": 1000, "permission_profiles": ["<profile>"]}},
        {"path": "permission_profiles.<alias>", "name": "profile", "label": "Permission profile",
         "values": {"grants": {"sessions": ["create", "read", "update", "execute"], "system": ["read"]},
                    "allowed_agents": ["echo"], "config_write_paths": []}},
    ]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_config_has_only_its_agents_configured() {
        let mut config: Config = toml::from_str("[agents.echo]\nbackend = \"echo\"\n").unwrap();
        let s = sections(&config);
        let keys: Vec<_> = s.iter().map(|s| (s.key, s.completed)).collect();
        assert_eq!(
            keys,
            [
                ("daemon", false),
                ("security", false),
                ("agents", true),
                ("gateway", false),
                ("users", false),
                ("permission_profiles", false)
            ]
        );
        config.daemon.session_idle_secs = 5;
        assert!(sections(&config)[0].completed);
    }

    #[test]
    fn every_template_names_a_map_path_and_values() {
        let t = templates();
        for entry in t["templates"].as_array().unwrap() {
            let path = entry["path"].as_str().unwrap();
            assert!(["agents.", "users.", "permission_profiles."]
                .iter()
                .any(|p| path.starts_with(p)));
            assert!(entry["values"].is_object());
        }
    }
}
