//! Reading and writing single props (`config/get`, `config/set`) and the effective config.
//!
//! Values go through the JSON form of the typed [`Config`]: a prop is a path in that tree, so one
//! generic walk serves every field and the serde structs stay the only definition of defaults.
//! A write first converts the client's value by the value rules of §8.15, so the tree always
//! deserializes back; a prop below a missing map entry creates the entry with its defaults.

use serde_json::{Map, Value};

use super::agent_spec::Backend;
use super::paths::{self, Kind, MAPS, SECTIONS};
use super::schema::Config;

/// The mask that replaces every paired-token digest, and every `env` value of an agent whose
/// backend is an addition (`acp`, `openai`), in reads.
pub const MASK: &str = "****";

/// Why a prop cannot be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{prop}: {reason}")]
pub struct PropError {
    /// The prop as the client wrote it.
    pub prop: String,
    /// What is wrong.
    pub reason: PropReason,
}

/// The reasons of [`PropError`]; `Display` is the wording used in messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropReason {
    /// Not a prop (includes maps, map entries, sections and missing entries on read).
    #[error("unknown prop")]
    Unknown,
    /// `schema_version`.
    #[error("read-only prop")]
    ReadOnly,
    /// `gateway.paired_tokens`.
    #[error("read-only prop; use pairing/*")]
    PairingManaged,
    /// `null` value.
    #[error("null is not accepted (deleting a prop is out of scope)")]
    Null,
    /// The value does not fit the prop's type.
    #[error("expected {0}")]
    Type(String),
    /// The config could not be converted (should not happen).
    #[error("internal error: {0}")]
    Internal(String),
}

fn err(prop: &str, reason: PropReason) -> PropError {
    PropError {
        prop: prop.to_owned(),
        reason,
    }
}

/// The typed JSON value of `prop` in `config` (`config/get` with `prop`). An unset optional
/// field reads as `null`; paired-token digests and an added backend's `env` values read as
/// `"****"`.
pub fn get(config: &Config, prop: &str) -> Result<Value, PropError> {
    let parsed = paths::parse_prop(prop).ok_or_else(|| err(prop, PropReason::Unknown))?;
    let tree = to_tree(config, prop)?;
    let (last, parents) = match parsed.segments.split_last() {
        Some(split) => split,
        None => return Err(err(prop, PropReason::Unknown)),
    };
    let mut node = &tree;
    for seg in parents {
        node = node
            .get(seg)
            .ok_or_else(|| err(prop, PropReason::Unknown))?;
    }
    match node.get(last) {
        Some(v) => Ok(v.clone()),
        // An unlisted resource of an existing profile is denied: an empty list.
        None if parsed.segments.len() == 4 && is_resource(last) => Ok(Value::Array(Vec::new())),
        None if parsed.segments.len() == 4 => Err(err(prop, PropReason::Unknown)),
        None => Ok(Value::Null),
    }
}

/// Writes `value` to `prop` by the value rules of §8.15, creating a missing map entry with
/// defaults. On error `config` is unchanged.
pub fn set(config: &mut Config, prop: &str, value: &Value) -> Result<(), PropError> {
    let parsed = paths::parse_prop(prop).ok_or_else(|| err(prop, PropReason::Unknown))?;
    if parsed.read_only {
        let reason = match parsed.segments.as_slice() {
            ["gateway", "paired_tokens"] => PropReason::PairingManaged,
            _ => PropReason::ReadOnly,
        };
        return Err(err(prop, reason));
    }
    if value.is_null() {
        return Err(err(prop, PropReason::Null));
    }
    let converted = convert(parsed.kind, value).map_err(|e| err(prop, PropReason::Type(e)))?;
    let mut tree = serde_json::to_value(&*config)
        .map_err(|e| err(prop, PropReason::Internal(e.to_string())))?;
    let (last, parents) = match parsed.segments.split_last() {
        Some(split) => split,
        None => return Err(err(prop, PropReason::Unknown)),
    };
    let mut node = &mut tree;
    for seg in parents {
        let map = node
            .as_object_mut()
            .ok_or_else(|| err(prop, PropReason::Internal("not a table".into())))?;
        node = map
            .entry((*seg).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let map = node
        .as_object_mut()
        .ok_or_else(|| err(prop, PropReason::Internal("not a table".into())))?;
    map.insert((*last).to_owned(), converted);
    *config =
        serde_json::from_value(tree).map_err(|e| err(prop, PropReason::Internal(e.to_string())))?;
    Ok(())
}

/// The effective running config for `config/get` without `prop`: every field with defaults
/// (unset optional fields as `null`), map entries sorted by key, secrets masked ([`MASK`]).
pub fn effective_json(config: &Config) -> Value {
    let mut tree = match serde_json::to_value(config) {
        Ok(tree) => tree,
        // Unreachable: every map key is a string.
        Err(_) => return Value::Null,
    };
    if let Some(root) = tree.as_object_mut() {
        root.entry("default_agent").or_insert(Value::Null);
        for (name, fields) in SECTIONS {
            if let Some(Value::Object(section)) = root.get_mut(*name) {
                fill_nulls(section, fields);
            }
        }
        for (name, fields) in MAPS {
            if let Some(Value::Object(map)) = root.get_mut(*name) {
                for entry in map.values_mut().filter_map(Value::as_object_mut) {
                    fill_nulls(entry, fields);
                }
            }
        }
    }
    mask_secrets(&mut tree);
    tree
}

fn fill_nulls(table: &mut Map<String, Value>, fields: &[paths::Field]) {
    for (name, _) in fields {
        table.entry(*name).or_insert(Value::Null);
    }
}

/// Replaces what reads must not show with [`MASK`]: paired-token digests, and the `env`
/// values of agents on an added backend (the names stay visible).
fn mask_secrets(tree: &mut Value) {
    let tokens = tree
        .get_mut("gateway")
        .and_then(|g| g.get_mut("paired_tokens"))
        .and_then(Value::as_array_mut);
    for t in tokens.into_iter().flatten() {
        *t = Value::String(MASK.to_owned());
    }
    let agents = tree.get_mut("agents").and_then(Value::as_object_mut);
    for agent in agents.into_iter().flat_map(|a| a.values_mut()) {
        if !env_is_secret(agent) {
            continue;
        }
        let env = agent.get_mut("env").and_then(Value::as_object_mut);
        for value in env.into_iter().flat_map(|e| e.values_mut()) {
            *value = Value::String(MASK.to_owned());
        }
    }
}

/// The values the daemon never shows, in a log line or an answer: the `env` values
/// of agents on an added backend (the ones [`mask_secrets`] masks in reads) and the value of the
/// variable each agent's `api_key_env` names (`var` reads the daemon's environment), and the
/// key in each agent's `api_key_file` (`file` reads it; an unreadable file holds none). Not the
/// paired-token digests: `pairing/list` answers them (a digest grants nothing); the tokens
/// themselves are never kept.
pub fn secret_values(
    config: &Config,
    var: impl Fn(&str) -> Option<String>,
    file: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut values = Vec::new();
    for (alias, agent) in &config.agents {
        let spec = config.agent_spec(alias);
        if spec.is_some_and(|s| s.backend().is_addition()) {
            values.extend(agent.env.values().cloned());
        }
        values.extend(agent.api_key_env.as_deref().and_then(&var));
        values.extend(agent.api_key_file.as_deref().and_then(&file));
    }
    values
}

/// Whether reads mask `agent`'s `env` values (an agent entry of the JSON tree): the
/// backends of version 1 (§10.2) read as written, as §8.13 says; those added since hold
/// credentials in `env` (an ACP agent's API key), so theirs is masked (docs/decisions.md,
/// "An added agent's env is masked in reads"; [`Backend::is_addition`]).
fn env_is_secret(agent: &Value) -> bool {
    agent
        .get("backend")
        .and_then(Value::as_str)
        .and_then(Backend::parse)
        .is_some_and(Backend::is_addition)
}

/// Whether the prop `path` of the effective tree `tree` reads masked: `gateway.paired_tokens`,
/// and `agents.<a>.env` of an agent on an added backend (`config/list`'s `is_secret`).
pub fn is_secret(tree: &Value, path: &str) -> bool {
    match path.split('.').collect::<Vec<_>>().as_slice() {
        ["gateway", "paired_tokens"] => true,
        ["agents", alias, "env"] => tree["agents"].get(*alias).is_some_and(env_is_secret),
        _ => false,
    }
}

fn to_tree(config: &Config, prop: &str) -> Result<Value, PropError> {
    let mut tree =
        serde_json::to_value(config).map_err(|e| err(prop, PropReason::Internal(e.to_string())))?;
    mask_secrets(&mut tree);
    Ok(tree)
}

fn is_resource(name: &str) -> bool {
    matches!(name, "system" | "sessions" | "config" | "files")
}

/// Converts a client value to the canonical JSON of `kind`, or says what was expected.
fn convert(kind: Kind, value: &Value) -> Result<Value, String> {
    match kind {
        Kind::Str => match value {
            Value::String(_) => Ok(value.clone()),
            Value::Number(_) | Value::Bool(_) => Ok(Value::String(value.to_string())),
            _ => Err("a string".into()),
        },
        Kind::Int(max) => {
            let n = match value {
                Value::Number(n) => n.as_u64(),
                Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                    s.parse::<u64>().ok()
                }
                _ => None,
            };
            match n {
                Some(n) if n <= max => Ok(Value::from(n)),
                _ => Err(format!("an integer in 0..={max}")),
            }
        }
        Kind::Num => {
            let n = match value {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.parse::<f64>().ok(),
                _ => None,
            };
            match n.and_then(serde_json::Number::from_f64) {
                Some(n) => Ok(Value::Number(n)),
                None => Err("a finite number".into()),
            }
        }
        Kind::Bool => match value {
            Value::Bool(_) => Ok(value.clone()),
            Value::String(s) if s == "true" => Ok(Value::Bool(true)),
            Value::String(s) if s == "false" => Ok(Value::Bool(false)),
            _ => Err("a boolean".into()),
        },
        Kind::StrList => match value {
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(value.clone()),
            _ => Err("an array of strings".into()),
        },
        Kind::StrTable => match value {
            Value::Object(m) if m.values().all(Value::is_string) => Ok(value.clone()),
            _ => Err("an object of string values".into()),
        },
        Kind::Grants => match value {
            Value::Object(m)
                if m.values().all(|v| {
                    v.as_array()
                        .is_some_and(|verbs| verbs.iter().all(Value::is_string))
                }) =>
            {
                Ok(value.clone())
            }
            _ => Err("an object of resource to array of verbs".into()),
        },
    }
}

#[cfg(test)]
#[path = "props_tests.rs"]
mod tests;
