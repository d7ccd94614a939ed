//! The daemon's configuration: the typed `config.toml` (§11), props (§8.14–8.16), validation
//! (§11.3), the authorization policy derived from it (§5.2, §6) and its atomic persistence.
//!
//! The pieces compose into the config pipeline of §8.16: the caller checks write paths
//! ([`staging::check_write_paths`]), stages the entries into a validated candidate
//! ([`staging::stage_many`]), derives the new [`Policy`] from it, persists it
//! ([`ConfigStore::commit`]) and only then installs it. Nothing here takes async locks or talks
//! JSON-RPC: every error is a [`ConfigError`] whose message is the spec's wording.

mod admit;
pub mod agent_spec;
mod edit;
pub mod error;
mod grant;
mod paths;
pub mod policy;
pub mod props;
pub mod schema;
pub mod shape;
pub mod staging;
pub mod store;
mod toml_text;
pub mod validate;

pub use admit::{admit, admit_all};
pub use agent_spec::{AgentSpec, Temperature};
pub use error::ConfigError;
pub use paths::{
    is_child_base_var, is_env_name, is_env_value, is_valid_name, prop_paths, PropInfo,
    CHILD_BASE_VARS,
};
pub use policy::{
    is_admin_only_prop, is_paired, selector_matches, token_digest, token_from_bytes, AgentSelector,
    Grant, GrantSet, Policy, Principal, Resolution, Resource, Verb, SHARED_OPERATOR_ID,
};
pub use props::{effective_json, is_secret, secret_values, PropError, PropReason};
pub use schema::{
    AgentConfig, Config, DaemonConfig, GatewayConfig, PermissionProfile, SecurityConfig, UserConfig,
};
pub use staging::{check_write_path, check_write_paths, stage_many, stage_one};
pub use store::ConfigStore;
pub use toml_text::toml_error;
pub use validate::{validate, Failure};
