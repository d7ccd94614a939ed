//! The authorization policy derived from a configuration (§5.2, §6) and pairing-token digests
//! (§6.7).
//!
//! A [`Policy`] is a pure function of the config: it maps a peer uid (or its absence) to a
//! [`Principal`], whose grants, agent selector and config write selectors answer every
//! authorization question without looking at the config again. `Policy` is `Eq`, so the daemon
//! can compare the old and new policy at commit time to decide whether to bump the generation.

pub use super::grant::{Grant, GrantSet, Resource, Verb};
use super::schema::Config;
use std::collections::BTreeSet;

/// Which agents a principal may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSelector {
    /// `"*"`.
    All,
    /// Exactly these aliases (possibly none).
    Only(BTreeSet<String>),
}

/// An authenticated identity with its resolved permissions (§6.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `shared-operator` or `user:<principal_id>`.
    pub id: String,
    /// Passes every grant, selector and ownership check.
    pub admin: bool,
    /// Union of the profiles' grants.
    pub grants: GrantSet,
    /// Union of the profiles' `allowed_agents`.
    pub allowed_agents: AgentSelector,
    /// Union of the profiles' `config_write_paths`, in first-seen order.
    pub write_paths: Vec<String>,
}

/// The principal id of the shared operator.
pub const SHARED_OPERATOR_ID: &str = "shared-operator";

impl Principal {
    /// The shared operator: admin.
    pub fn shared_operator() -> Principal {
        Principal {
            id: SHARED_OPERATOR_ID.to_owned(),
            admin: true,
            grants: GrantSet::all(),
            allowed_agents: AgentSelector::All,
            write_paths: vec!["*".to_owned()],
        }
    }

    /// A non-admin `user:x` with no grants, any agent, and only these
    /// config write paths: what the write-path tests judge.
    #[cfg(test)]
    pub(crate) fn writer(write_paths: &[&str]) -> Principal {
        Principal {
            id: "user:x".into(),
            admin: false,
            grants: GrantSet::default(),
            allowed_agents: AgentSelector::All,
            write_paths: write_paths.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// Whether the principal holds `grant` (admins hold every grant).
    pub fn has(&self, grant: Grant) -> bool {
        self.admin || self.grants.contains(grant)
    }

    /// Whether the principal may use agent `alias` (§6.6).
    pub fn may_use_agent(&self, alias: &str) -> bool {
        self.admin
            || match &self.allowed_agents {
                AgentSelector::All => true,
                AgentSelector::Only(set) => set.contains(alias),
            }
    }

    /// Whether the principal may write `prop` (§6.3, §8.16 step 4).
    pub fn may_write(&self, prop: &str) -> bool {
        self.admin
            || (!is_admin_only_prop(prop)
                && self.write_paths.iter().any(|s| selector_matches(s, prop)))
    }

    /// `false` means `initialize` fails with `no_grants` (§5.2).
    pub fn has_any_grant(&self) -> bool {
        self.admin || !self.grants.is_empty()
    }
}

/// Props only admins may write, whatever `config_write_paths` says (§6.3).
pub fn is_admin_only_prop(prop: &str) -> bool {
    let segments: Vec<&str> = prop.split('.').collect();
    match segments.as_slice() {
        ["security" | "users" | "permission_profiles" | "gateway", ..] => true,
        // One client must not shrink the memory every other client shares.
        ["daemon", "memory_budget_mib"] => true,
        ["agents", _, field, ..] => {
            // `fs`, `terminal` and `permission_default` widen what an ACP
            // agent may do on the host (docs/agents.md).
            // The openai keys that choose where prompts and a secret go
            // (`base_url`, `api_key_env`) or what a model may do unasked
            // (`tools`, `approval`) are as sensitive as `command`.
            matches!(
                *field,
                "backend"
                    | "command"
                    | "env"
                    | "workspace_dir"
                    | "fs"
                    | "terminal"
                    | "permission_default"
                    | "base_url"
                    | "api_key_env"
                    | "api_key_file"
                    | "tools"
                    | "approval"
            )
        }
        _ => false,
    }
}

/// `"*"` matches every prop; `"foo.*"` matches `foo` and every prop below it; anything else
/// matches exactly that prop.
pub fn selector_matches(selector: &str, prop: &str) -> bool {
    if selector == "*" {
        return true;
    }
    match selector.strip_suffix(".*") {
        Some(prefix) => {
            prop == prefix
                || prop
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('.'))
        }
        None => prop == selector,
    }
}

/// The outcome of mapping a local credential to a principal (§5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The credential binds this principal (check [`Principal::has_any_grant`] next).
    Bound(Principal),
    /// `-32010` "Credential rejected".
    CredentialRejected,
    /// `-32010` "A local user roster is configured: …".
    RosterRequired,
}

impl Resolution {
    /// `data.reason` of the failure (§7.2), `None` when bound.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Resolution::Bound(_) => None,
            Resolution::CredentialRejected => Some("credential_rejected"),
            Resolution::RosterRequired => Some("roster_required"),
        }
    }
}

/// The authorization policy of one config: the roster with resolved principals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    trust_daemon_uid: bool,
    /// Every roster entry (`uid` may be absent only in an invalid config).
    users: Vec<(Option<u32>, Principal)>,
}

impl Policy {
    /// Derives the policy; profiles that do not exist are ignored (validation rejects them).
    pub fn from_config(config: &Config) -> Policy {
        let users = config
            .users
            .iter()
            .map(|(name, user)| {
                let mut p = Principal {
                    id: format!("user:{}", user.effective_principal_id(name)),
                    admin: false,
                    grants: GrantSet::default(),
                    allowed_agents: AgentSelector::Only(BTreeSet::new()),
                    write_paths: Vec::new(),
                };
                let names = user.permission_profiles.iter().flatten();
                for profile in names.filter_map(|n| config.permission_profiles.get(n)) {
                    p.admin |= profile.admin;
                    for (resource, verbs) in &profile.grants {
                        let Some(r) = Resource::parse(resource) else {
                            continue;
                        };
                        for v in verbs.iter().filter_map(|v| Verb::parse(v)) {
                            p.grants.insert(Grant(r, v));
                        }
                    }
                    for alias in &profile.allowed_agents {
                        if alias == "*" {
                            p.allowed_agents = AgentSelector::All;
                        } else if let AgentSelector::Only(set) = &mut p.allowed_agents {
                            set.insert(alias.clone());
                        }
                    }
                    for s in &profile.config_write_paths {
                        if !p.write_paths.contains(s) {
                            p.write_paths.push(s.clone());
                        }
                    }
                }
                (user.uid, p)
            })
            .collect();
        Policy {
            trust_daemon_uid: config.security.trust_daemon_uid,
            users,
        }
    }

    /// Maps a known peer uid (§5.2): the daemon's own uid when trusted, else exactly one
    /// roster entry, else rejected (root included).
    pub fn resolve_uid(&self, uid: u32, daemon_uid: u32) -> Resolution {
        if uid == daemon_uid && self.trust_daemon_uid {
            return Resolution::Bound(Principal::shared_operator());
        }
        let mut mapped = self.users.iter().filter(|(u, _)| *u == Some(uid));
        match (mapped.next(), mapped.next()) {
            (Some((_, p)), None) => Resolution::Bound(p.clone()),
            _ => Resolution::CredentialRejected,
        }
    }

    /// Maps a connection without a peer uid: the shared operator unless a roster exists.
    pub fn resolve_no_uid(&self) -> Resolution {
        if self.users.is_empty() {
            Resolution::Bound(Principal::shared_operator())
        } else {
            Resolution::RosterRequired
        }
    }
}

/// SHA-256 over the whole token (`zc_` included), as 64 lowercase hex digits (§6.7).
pub fn token_digest(token: &str) -> String {
    crate::hex::sha256(token.as_bytes())
}

/// Whether `token` is paired in `config` (digests compared case-insensitively).
pub fn is_paired(config: &Config, token: &str) -> bool {
    let digest = token_digest(token);
    config
        .gateway
        .paired_tokens
        .iter()
        .any(|d| d.eq_ignore_ascii_case(&digest))
}

/// Formats 32 random bytes as a pairing token: `zc_` + 64 lowercase hex digits.
pub fn token_from_bytes(bytes: &[u8; 32]) -> String {
    format!("zc_{}", crate::hex::lower(bytes))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
