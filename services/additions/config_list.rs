//! `config/list` and `config/map-keys` (protocol additions, read-only, for
//! zerocode's Config tab): every prop of the effective config under a
//! prefix, typed and described in the shape zerocode's `ConfigFieldEntry`
//! decodes, and the entry names of a map. Writes stay `config/set` and
//! `config/set-many` (§8.15–§8.16).

use serde::Deserialize;
use serde_json::{json, Value};

use super::params::{self, bad, Member};
use crate::config::agent_spec::{Backend, InputMode};
use crate::config::{is_secret, prop_paths, PropInfo};
use crate::error::RpcError;
use crate::request::Request;
use crate::state::Daemon;

/// The maps `config/map-keys` lists.
const MAPS: [&str; 3] = ["agents", "permission_profiles", "users"];

fn enum_variants(path: &str) -> Option<&'static [&'static str]> {
    if path.starts_with("agents.") {
        if path.ends_with(".backend") {
            return Some(Backend::NAMES);
        }
        if path.ends_with(".input") {
            return Some(InputMode::NAMES);
        }
    }
    None
}

fn lookup<'v>(tree: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(tree, |node, seg| node.get(seg))
}

fn entry(tree: &Value, p: &PropInfo) -> Value {
    let value = lookup(tree, &p.path).cloned().unwrap_or(Value::Null);
    let variants = enum_variants(&p.path);
    json!({
        "path": p.path,
        "category": p.section,
        "section": p.section,
        "kind": if variants.is_some() { "enum" } else { p.kind },
        "type_hint": p.kind,
        "populated": !value.is_null(),
        "value": value,
        // What reads show masked (paired tokens, an added backend's `env`).
        "is_secret": is_secret(tree, &p.path),
        "is_env_overridden": false,
        "enum_variants": variants.unwrap_or(&[]),
        "description": "",
    })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListParams {
    prefix: Member<String>,
}

/// `config/list {prefix?}`: the props equal to or under `prefix`.
pub fn list(daemon: &Daemon, req: &Request) -> Result<Value, RpcError> {
    let p: ListParams = params::decode(req)?;
    let prefix = p.prefix.opt("prefix")?.unwrap_or_default();
    let tree = daemon.config.effective_view(&daemon.paths.config_dir);
    let keys = |map: &str| -> Vec<String> {
        tree.get(map)
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let under = |path: &str| {
        prefix.is_empty()
            || path == prefix
            || path
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    };
    let entries: Vec<Value> = prop_paths(keys)
        .iter()
        .filter(|p| under(&p.path))
        .map(|p| entry(&tree, p))
        .collect();
    Ok(json!({ "entries": entries }))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MapKeysParams {
    path: Member<String>,
}

/// `config/map-keys {path}`: the entry names of `agents`, `users` or `permission_profiles`.
pub fn map_keys(daemon: &Daemon, req: &Request) -> Result<Value, RpcError> {
    let p: MapKeysParams = params::decode(req)?;
    let path = p.path.required("path")?;
    if !MAPS.contains(&path.as_str()) {
        return Err(bad(
            "path",
            "must be one of agents, users, permission_profiles",
        ));
    }
    let running = daemon.config.current();
    let keys: Vec<&String> = match path.as_str() {
        "agents" => running.agents.keys().collect(),
        "users" => running.users.keys().collect(),
        _ => running.permission_profiles.keys().collect(),
    };
    Ok(json!({ "keys": keys }))
}
