//! The user's `config.toml` over a real daemon and socket: a write edits the file in
//! place (exact bytes compared), a hand edit is picked up without a restart (poll and SIGHUP),
//! an invalid one is refused and logged while the running config stays, an edit racing a write
//! is never lost silently, `default_agent`, and `config/replace`.

// Unix only: SIGHUP reloads (Windows has the metadata poll only).

use crate::common;

use std::path::Path;

use common::start::{write_config, Env};
use common::users::config_bytes;
use common::wait::eventually;
use common::{Client, Daemon, TestDir, RECV_TIMEOUT};
use serde_json::{json, Value};

/// A file as a person writes one: comments, odd order, single quotes, a hex number.
const USER_FILE: &str = "\
# My zeroclaw config.
schema_version = 1

[agents.zeta]   # the one I use
backend = 'echo'
chunk_chars = 0x10

# the daemon, after the agents on purpose
[daemon]
ask_timeout_secs = 60 # a minute

[agents.alpha]
backend = \"echo\"
";

/// A daemon on `text`; `poll_ms` sets `ZEROCLAW_CONFIG_POLL_MS` (`"0"`: SIGHUP only).
fn start(text: &str, poll_ms: Option<&str>) -> Env {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    write_config(&cfg, text);
    let mut b = Daemon::builder().config_dir(&cfg);
    if let Some(ms) = poll_ms {
        b = b.env("ZEROCLAW_CONFIG_POLL_MS", ms);
    }
    Env {
        daemon: b.spawn(),
        dir,
    }
}

fn file(d: &Daemon) -> String {
    String::from_utf8(config_bytes(&d.config_dir)).unwrap()
}

/// Replaces config.toml as editors do: a new file renamed over it.
fn hand_edit(cfg: &Path, text: &str) {
    let tmp = cfg.join("config.toml.hand");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, cfg.join("config.toml")).unwrap();
}

fn get(c: &mut Client, prop: &str) -> Value {
    c.ok("config/get", json!({ "prop": prop }))["value"].clone()
}

fn set(c: &mut Client, prop: &str, value: Value) -> Result<Value, Value> {
    c.request("config/set", json!({"prop": prop, "value": value}))
}

#[track_caller]
fn assert_config_changed(e: &Value) {
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(e["data"]["reason"], "config_changed", "{e}");
}

/// Waits until `config/get prop` reads `want`.
fn wait_value(c: &mut Client, prop: &str, want: Value) {
    eventually(&format!("{prop} = {want}"), RECV_TIMEOUT, || {
        (get(c, prop) == want).then_some(())
    });
}

#[test]
fn a_set_changes_one_line_of_the_users_file_and_nothing_else() {
    let env = start(USER_FILE, None);
    let mut c = env.client();
    set(&mut c, "daemon.ask_timeout_secs", json!(90)).unwrap();
    let want = USER_FILE.replace("ask_timeout_secs = 60 #", "ask_timeout_secs = 90 #");
    assert_eq!(file(&env), want);

    // A new key ends its table; a new entry follows its siblings; a named prop set to its
    // default is written; no other default ever is.
    let sets = json!([
        {"prop": "agents.zeta.timeout_secs", "value": 600},
        {"prop": "agents.beta.backend", "value": "echo"},
        {"prop": "default_agent", "value": "beta"},
    ]);
    c.ok("config/set-many", json!({ "sets": sets }));
    let want =
        want.replace(
            "schema_version = 1\n",
            "schema_version = 1\ndefault_agent = \"beta\"\n",
        )
        .replace(
            "chunk_chars = 0x10\n",
            "chunk_chars = 0x10\ntimeout_secs = 600\n",
        ) + "\n[agents.beta]\nbackend = \"echo\"\n";
    assert_eq!(file(&env), want);
    // A value the file already holds, in its own spelling, changes nothing.
    set(&mut c, "agents.zeta.chunk_chars", json!(16)).unwrap();
    assert_eq!(file(&env), want);
}

#[test]
fn a_hand_edit_is_picked_up_without_a_restart() {
    let env = start(USER_FILE, None);
    let mut c = env.client();
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 60);
    let from = env.log.len();
    let edited = USER_FILE.replace("ask_timeout_secs = 60", "ask_timeout_secs = 75");
    hand_edit(&env.config_dir, &edited);
    wait_value(&mut c, "daemon.ask_timeout_secs", json!(75));
    let (_, ev) = env
        .log
        .wait_event(from, "config_reloaded", RECV_TIMEOUT)
        .expect("config_reloaded logged");
    assert_eq!(ev["trigger"], "watch", "{ev}");
    // The daemon remembers the reloaded bytes: the next write is not refused, and keeps them.
    set(&mut c, "agents.alpha.chunk_chars", json!(3)).unwrap();
    assert_eq!(file(&env), format!("{edited}chunk_chars = 3\n"));
}

#[test]
fn an_invalid_hand_edit_is_refused_logged_and_the_running_config_stays() {
    let env = start(USER_FILE, None);
    let mut c = env.client();
    let from = env.log.len();
    let bad = USER_FILE
        .replace("ask_timeout_secs = 60", "ask_timeout_secs = 0")
        .replace("chunk_chars = 0x10", "chunk_chars = 0");
    hand_edit(&env.config_dir, &bad);
    let (_, ev) = env
        .log
        .wait_event(from, "config_reload_refused", RECV_TIMEOUT)
        .expect("config_reload_refused logged");
    // Every error at once, by path.
    assert_eq!(
        ev["errors"],
        "invalid configuration: agents.zeta.chunk_chars: must be at least 1; \
         invalid configuration: daemon.ask_timeout_secs: must be at least 1",
        "{ev}"
    );
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 60);
    assert_eq!(get(&mut c, "agents.zeta.chunk_chars"), 16);
    // A write now would overwrite the edit: refused (§8.16 step 8), the edit stays.
    assert_config_changed(&set(&mut c, "daemon.upload_idle_secs", json!(5)).unwrap_err());
    assert_eq!(file(&env), bad);
    assert!(env.log.events_named("config_reloaded").is_empty());

    // Fixed: picked up.
    let fixed = bad
        .replace("chunk_chars = 0", "chunk_chars = 2")
        .replace("ask_timeout_secs = 0", "ask_timeout_secs = 30");
    hand_edit(&env.config_dir, &fixed);
    wait_value(&mut c, "agents.zeta.chunk_chars", json!(2));
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 30);
    assert_eq!(env.log.events_named("config_reload_refused").len(), 1);
}

#[test]
fn sighup_reloads_and_an_edit_racing_a_write_is_refused_not_lost() {
    // No poll: only SIGHUP reloads, so the race is deterministic.
    let env = start(USER_FILE, Some("0"));
    let mut c = env.client();
    let edited = USER_FILE.replace("ask_timeout_secs = 60", "ask_timeout_secs = 61");
    hand_edit(&env.config_dir, &edited);
    // The write that comes before the reload is refused and writes nothing.
    assert_config_changed(&set(&mut c, "agents.alpha.chunk_chars", json!(3)).unwrap_err());
    assert_eq!(file(&env), edited);
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 60);

    let from = env.log.len();
    env.wait_for_handler(libc::SIGHUP);
    env.signal(libc::SIGHUP);
    let (_, ev) = env
        .log
        .wait_event(from, "config_reloaded", RECV_TIMEOUT)
        .expect("config_reloaded after SIGHUP");
    assert_eq!(ev["trigger"], "sighup", "{ev}");
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 61);
    // The retried write applies on top of the edit: both are kept.
    set(&mut c, "agents.alpha.chunk_chars", json!(3)).unwrap();
    assert_eq!(file(&env), format!("{edited}chunk_chars = 3\n"));

    // An invalid file on SIGHUP: refused and logged, nothing changes.
    let bad = file(&env).replace("chunk_chars = 3", "chunk_chars = \"three\"");
    hand_edit(&env.config_dir, &bad);
    let from = env.log.len();
    env.signal(libc::SIGHUP);
    let (_, ev) = env
        .log
        .wait_event(from, "config_reload_refused", RECV_TIMEOUT)
        .expect("config_reload_refused after SIGHUP");
    assert_eq!(
        ev["errors"],
        "invalid configuration: agents.alpha.chunk_chars: expected an integer in 0..=4294967295",
        "{ev}"
    );
    assert_eq!(get(&mut c, "agents.alpha.chunk_chars"), 3);
}

#[test]
fn edits_racing_writes_with_the_poll_on_lose_nothing() {
    let env = start(USER_FILE, None);
    let mut c = env.client();
    for i in 0..15u32 {
        let text = file(&env);
        let edited = text.replacen(
            "backend = 'echo'\n",
            &format!("backend = 'echo'\nsystem_prompt = 'hand {i}'\n"),
            1,
        );
        let edited = match i {
            0 => edited,
            _ => edited.replacen(&format!("system_prompt = 'hand {}'\n", i - 1), "", 1),
        };
        hand_edit(&env.config_dir, &edited);
        let n = 100 + i;
        if let Err(e) = set(&mut c, "daemon.upload_idle_secs", json!(n)) {
            // Refused: the edit was not loaded yet. It is, soon; the retry lands on top.
            assert_config_changed(&e);
            wait_value(
                &mut c,
                "agents.zeta.system_prompt",
                json!(format!("hand {i}")),
            );
            set(&mut c, "daemon.upload_idle_secs", json!(n)).unwrap();
        }
        let now = file(&env);
        assert!(
            now.contains(&format!("system_prompt = 'hand {i}'\n")),
            "{i}: {now}"
        );
        assert!(
            now.contains(&format!("upload_idle_secs = {n}\n")),
            "{i}: {now}"
        );
        assert_eq!(
            get(&mut c, "agents.zeta.system_prompt"),
            format!("hand {i}")
        );
        assert_eq!(get(&mut c, "daemon.upload_idle_secs"), n);
    }
}

const TWO_AGENTS: &str = "schema_version = 1\ndefault_agent = \"zeta\"\n\n[agents.alpha]\nbackend = \"echo\"\n\n[agents.zeta]\nbackend = \"echo\"\n";

#[test]
fn default_agent_is_used_shown_and_validated() {
    let env = start(TWO_AGENTS, None);
    let mut c = env.client();
    let s = c.ok("session/new", json!({"session_id": "s-1"}));
    assert_eq!(s["agent_alias"], "zeta", "{s}");
    assert_eq!(get(&mut c, "default_agent"), "zeta");
    assert_eq!(c.ok("config/get", json!({}))["default_agent"], "zeta");
    let listed = c.ok("config/list", json!({"prefix": "default_agent"}));
    let e = &listed["entries"][0];
    assert_eq!(
        (&e["path"], &e["kind"], &e["value"]),
        (&json!("default_agent"), &json!("string"), &json!("zeta")),
        "{listed}"
    );
    let agents = c.ok("agents/status", json!({}));
    let marks: Vec<(&str, bool)> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["alias"].as_str().unwrap(), a["default"] == true))
        .collect();
    assert_eq!(marks, [("alpha", false), ("zeta", true)]);

    let e = set(&mut c, "default_agent", json!("nope")).unwrap_err();
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(
        e["message"],
        "invalid configuration: default_agent: unknown agent \"nope\" (must name a configured agent)"
    );
    assert_eq!(e["data"], json!({"path": "default_agent"}));
    set(&mut c, "default_agent", json!("alpha")).unwrap();
    assert_eq!(
        file(&env),
        TWO_AGENTS.replace("default_agent = \"zeta\"", "default_agent = \"alpha\"")
    );
    let s = c.ok("session/new", json!({"session_id": "s-2"}));
    assert_eq!(s["agent_alias"], "alpha", "{s}");
}

#[test]
fn without_default_agent_session_new_still_requires_an_alias() {
    let env = start(&TWO_AGENTS.replace("default_agent = \"zeta\"\n", ""), None);
    let mut c = env.client();
    assert_eq!(get(&mut c, "default_agent"), Value::Null);
    let e = c.fails("session/new", json!({"session_id": "s-1"}));
    assert_eq!(
        (&e["code"], &e["message"]),
        (&json!(-32602), &json!("agent_alias is required"))
    );
    // The CLI's default is then the alias that sorts first, and `agents` marks it.
    let agents = c.ok("agents/status", json!({}));
    assert_eq!(agents["agents"][0]["alias"], "alpha");
    assert_eq!(agents["agents"][0]["default"], true);
    assert_eq!(agents["agents"][1]["default"], false);
}

#[test]
fn config_replace_checks_the_base_and_lists_every_error() {
    let env = start(USER_FILE, Some("0"));
    let mut c = env.client();
    let base = common::users::digest(USER_FILE);
    let text = USER_FILE.replace("ask_timeout_secs = 60", "ask_timeout_secs = 5");

    let e = c.fails(
        "config/replace",
        json!({"text": text, "base_sha256": "00".repeat(32)}),
    );
    assert_config_changed(&e);

    let bad = "schema_version = 1\nnope = 1\n[agents.echo]\nbackend = \"echo\"\nfoo = 2\n";
    let e = c.fails("config/replace", json!({"text": bad, "base_sha256": base}));
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(
        e["data"]["errors"],
        json!([
            "invalid configuration: agents.echo.foo: unknown key",
            "invalid configuration: nope: unknown key"
        ])
    );
    assert_eq!(
        e["message"],
        "invalid configuration: agents.echo.foo: unknown key (and 1 more)"
    );
    assert_eq!(file(&env), USER_FILE);

    let r = c.ok("config/replace", json!({"text": text, "base_sha256": base}));
    assert_eq!(
        r,
        json!({"replaced": true, "sha256": common::users::digest(&text)})
    );
    assert_eq!(file(&env), text);
    assert_eq!(get(&mut c, "daemon.ask_timeout_secs"), 5);
    // The base is the file as it is now.
    let e = c.fails(
        "config/replace",
        json!({"text": USER_FILE, "base_sha256": base}),
    );
    assert_config_changed(&e);
}
