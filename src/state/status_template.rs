//! The constant parts of a `status` result (§8.2), serialized once
//! per daemon: most members never change while it runs, so an answer
//! writes only the few that do (uptime, principal, sessions, connections)
//! between these pre-built bytes. Built with the daemon's state, so it
//! lives here; `services/status.rs` renders it and keeps the last result.

use serde::Serialize;

use super::Paths;

/// The constant parts of a `status` result, serialized once per daemon.
#[derive(Debug)]
pub struct StatusTemplate {
    /// Up to and including `"uptime_secs":`.
    head: Vec<u8>,
    /// From `,"ephemeral":` to the closing brace.
    tail: Vec<u8>,
}

impl StatusTemplate {
    /// The template of `daemon`'s constant members.
    pub fn new(paths: &Paths, ephemeral: bool) -> Self {
        #[derive(Serialize)]
        struct Tail<'a> {
            ephemeral: bool,
            config_dir: &'a str,
            config_file: &'a str,
            data_dir: &'a str,
            local_ipc_endpoint: &'a str,
        }
        let head = format!(
            r#"{{"server_version":"{}","protocol_version":1,"server_pid":{},"uptime_secs":"#,
            env!("CARGO_PKG_VERSION"),
            std::process::id()
        )
        .into_bytes();
        let tail = Tail {
            ephemeral,
            config_dir: &paths.config_dir.to_string_lossy(),
            config_file: &paths.config_file.to_string_lossy(),
            data_dir: &paths.data_dir.to_string_lossy(),
            local_ipc_endpoint: &paths.endpoint,
        };
        // `{"ephemeral":…}` becomes `,"ephemeral":…}`: drop the opening brace.
        let mut tail = serde_json::to_vec(&tail).unwrap_or_else(|_| b"{}".to_vec());
        tail[0] = b',';
        Self { head, tail }
    }

    /// About the bytes of a result (a size hint).
    pub fn capacity(&self) -> usize {
        self.head.len() + self.tail.len() + 96
    }

    /// Appends the result for `principal_id` seeing `session_ids` to `buf`.
    pub fn write(
        &self,
        buf: &mut Vec<u8>,
        uptime_secs: u64,
        principal_id: &str,
        session_ids: &[String],
        connections: usize,
    ) {
        // Numbers through `itoa` and an empty list by hand: `fmt` machinery
        // was a tenth of this method's cost.
        let mut n = itoa::Buffer::new();
        buf.extend_from_slice(&self.head);
        buf.extend_from_slice(n.format(uptime_secs).as_bytes());
        buf.extend_from_slice(br#","principal_id":"#);
        // Serializing strings into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, principal_id);
        buf.extend_from_slice(br#","active_sessions":"#);
        buf.extend_from_slice(n.format(session_ids.len()).as_bytes());
        buf.extend_from_slice(br#","session_ids":"#);
        if session_ids.is_empty() {
            buf.extend_from_slice(b"[]");
        } else {
            let _ = serde_json::to_writer(&mut *buf, session_ids);
        }
        buf.extend_from_slice(br#","connections":"#);
        buf.extend_from_slice(n.format(connections).as_bytes());
        buf.extend_from_slice(&self.tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Payload;

    #[test]
    fn the_template_renders_the_spec_members_in_order() {
        let paths = Paths {
            config_dir: "/c".into(),
            config_file: "/c/config.toml".into(),
            data_dir: "/c/da\"ta".into(),
            endpoint: "/c/data/daemon.sock".into(),
        };
        let t = StatusTemplate::new(&paths, false);
        let frame = Payload::from_writer(t.capacity(), |buf| {
            t.write(buf, 12, "shared-operator", &["a".into()], 3)
        })
        .into_frame(b"2");
        let v: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        let r = &v["result"];
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 13);
        assert_eq!(r["server_pid"], std::process::id());
        assert_eq!(r["uptime_secs"], 12);
        assert_eq!(r["principal_id"], "shared-operator");
        assert_eq!(r["active_sessions"], 1);
        assert_eq!(r["session_ids"], serde_json::json!(["a"]));
        assert_eq!(r["connections"], 3);
        assert_eq!(r["ephemeral"], false);
        assert_eq!(r["data_dir"], "/c/da\"ta");
        assert_eq!(r["local_ipc_endpoint"], "/c/data/daemon.sock");
        let text = String::from_utf8(frame).unwrap();
        assert!(
            text.starts_with(r#"{"jsonrpc":"2.0","result":{"server_version":"#),
            "{text}"
        );
        assert!(
            text.ends_with(
                r#""local_ipc_endpoint":"/c/data/daemon.sock"},"id":2}
"#
            ),
            "{text}"
        );
    }
}
