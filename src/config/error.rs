//! The one error type of the configuration module.
//!
//! Every variant carries what the JSON-RPC layer needs to build `error.data` (§7.2), and its
//! `Display` is the exact `message` the spec prescribes, so the caller maps the variant to a code
//! and copies `to_string()` without rewording it:
//!
//! | variant | code | `data` |
//! |---|---|---|
//! | [`ConfigError::InvalidEntry`] | -32602 | `index` (if any), `prop` |
//! | [`ConfigError::Invalid`] | -32602 | `index` (if any), `path` |
//! | [`ConfigError::Forbidden`] | -32012 | `reason: "config_path"`, `index` (if any), `prop` |
//! | [`ConfigError::ConfigChanged`] | -32603 | `reason: "config_changed"` |
//! | [`ConfigError::Storage`] | -32603 | `reason`: `storage`, `storage_full` or `storage_read_only` |
//! | [`ConfigError::Startup`], [`ConfigError::StartupIo`] | — | the daemon refuses to start |

use crate::storage_fault::StorageFault;

/// Errors of loading, staging and committing configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An entry of `config/set(-many)` cannot be applied (§8.16 step 5): unknown prop, wrong value
    /// type, read-only prop or `null`. `index` is `None` for `config/set`.
    #[error("{message}")]
    InvalidEntry {
        /// Index into `sets`, when the request was `config/set-many`.
        index: Option<usize>,
        /// The prop of the entry.
        prop: String,
        /// `sets[<i>]: <prop>: <reason>`, or `<prop>: <reason>` without an index.
        message: String,
    },
    /// The whole candidate failed validation (§8.16 step 6, §11.3).
    #[error("{message}")]
    Invalid {
        /// The last entry whose prop equals `path` or is an ancestor of it, if any.
        index: Option<usize>,
        /// The path of the failing check.
        path: String,
        /// `[sets[<i>]: ]invalid configuration: <path>: <reason>`.
        message: String,
    },
    /// A prop is outside the principal's config write paths or admin-only (§8.16 step 4).
    #[error("{}", forbidden_message(*.index, .prop))]
    Forbidden {
        /// The lowest forbidden index (`None` for `config/set`).
        index: Option<usize>,
        /// The forbidden prop.
        prop: String,
    },
    /// `config.toml` changed on disk since this daemon last read or wrote it (§8.16 step 8).
    #[error("config.toml changed on disk; restart the daemon")]
    ConfigChanged,
    /// Persisting failed; nothing was written (§8.16 step 8). `fault` is the
    /// class of the OS error, if one caused it.
    #[error("Config save failed: {message}")]
    Storage {
        fault: StorageFault,
        message: String,
    },
    /// The configuration cannot be loaded at startup: its content is invalid.
    #[error("{0}")]
    Startup(String),
    /// `config.toml` cannot be read or created at startup (an I/O failure of class `fault`).
    #[error("{message}")]
    StartupIo {
        fault: StorageFault,
        message: String,
    },
}

impl ConfigError {
    /// A failed save that no OS error caused (`data.reason = "storage"`).
    pub fn save_failed(message: impl Into<String>) -> Self {
        ConfigError::Storage {
            fault: StorageFault::Other,
            message: message.into(),
        }
    }
}

fn forbidden_message(index: Option<usize>, prop: &str) -> String {
    let text = format!("principal is not granted config write access to {prop}");
    match index {
        Some(i) => format!("sets[{i}]: {text}"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_spec_wording() {
        let e = ConfigError::Forbidden {
            index: Some(1),
            prop: "security.trust_daemon_uid".into(),
        };
        assert_eq!(
            e.to_string(),
            "sets[1]: principal is not granted config write access to security.trust_daemon_uid"
        );
        let e = ConfigError::Forbidden {
            index: None,
            prop: "users.a.uid".into(),
        };
        assert_eq!(
            e.to_string(),
            "principal is not granted config write access to users.a.uid"
        );
        assert_eq!(
            ConfigError::ConfigChanged.to_string(),
            "config.toml changed on disk; restart the daemon"
        );
        assert_eq!(
            ConfigError::Storage {
                fault: StorageFault::Full,
                message: "disk full".into()
            }
            .to_string(),
            "Config save failed: disk full"
        );
    }
}
