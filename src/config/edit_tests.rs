use serde_json::json;

use super::*;
use crate::config::{stage_many, Config};

/// `text` after staging `sets` on what it holds, edited in place.
fn edited(text: &str, sets: &[(&str, serde_json::Value)]) -> String {
    let current = Config::from_toml_str(text).unwrap();
    let sets: Vec<(String, serde_json::Value)> = sets
        .iter()
        .map(|(p, v)| ((*p).to_owned(), v.clone()))
        .collect();
    let (candidate, props) = stage_many(&current, &sets).unwrap();
    edit_text(text, &current, &candidate, &props).unwrap()
}

const USER_FILE: &str = "\
# My zeroclaw config.
schema_version = 1

[agents.zeta]   # the one I use
backend = 'command'
command = [ \"llm\",  \"-m\", 'local' ]   # spacing kept
chunk_chars = 0x10

# the daemon, after the agents on purpose
[daemon]
ask_timeout_secs = 60 # a minute

[agents.alpha]
backend = \"echo\"
";

#[test]
fn one_change_keeps_everything_else_byte_for_byte() {
    let out = edited(USER_FILE, &[("daemon.ask_timeout_secs", json!(90))]);
    assert_eq!(
        out,
        USER_FILE.replace("ask_timeout_secs = 60 #", "ask_timeout_secs = 90 #")
    );
}

#[test]
fn a_new_key_goes_at_the_end_of_its_table_and_no_default_is_written() {
    let out = edited(USER_FILE, &[("agents.alpha.chunk_delay_ms", json!(5))]);
    assert_eq!(out, format!("{USER_FILE}chunk_delay_ms = 5\n"));
    let out = edited(
        USER_FILE,
        &[("agents.zeta.system_prompt", json!("be brief"))],
    );
    assert_eq!(
        out,
        USER_FILE.replace(
            "chunk_chars = 0x10\n",
            "chunk_chars = 0x10\nsystem_prompt = \"be brief\"\n"
        )
    );
}

#[test]
fn a_named_prop_is_written_even_at_its_default_value() {
    // 600 is the default: written because the user asked for it.
    let out = edited(USER_FILE, &[("agents.alpha.timeout_secs", json!(600))]);
    assert_eq!(out, format!("{USER_FILE}timeout_secs = 600\n"));
    // A value the file already holds changes nothing, not even its spelling.
    let out = edited(USER_FILE, &[("agents.zeta.chunk_chars", json!(16))]);
    assert_eq!(out, USER_FILE);
}

#[test]
fn a_new_entry_follows_its_siblings_and_a_new_section_goes_last() {
    let text = "schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\n\n[users.me]\nuid = 7\npermission_profiles = [\"p\"]\n\n[permission_profiles.p]\nadmin = true\n";
    let out = edited(
        text,
        &[
            ("agents.new.backend", json!("echo")),
            ("gateway.port", json!(4000)),
            ("default_agent", json!("new")),
        ],
    );
    assert_eq!(
        out,
        "schema_version = 1\ndefault_agent = \"new\"\n\n[agents.echo]\nbackend = \"echo\"\n\n[agents.new]\nbackend = \"echo\"\n\n[users.me]\nuid = 7\npermission_profiles = [\"p\"]\n\n[permission_profiles.p]\nadmin = true\n\n[gateway]\nport = 4000\n"
    );
}

#[test]
fn tables_below_an_entry_are_inline_and_dotted_keys_stay_dotted() {
    let text = "schema_version = 1\ndaemon.ask_timeout_secs = 5\n[agents.echo]\nbackend = \"echo\"\nenv = { A = \"1\" }\n";
    let out = edited(
        text,
        &[
            ("daemon.upload_idle_secs", json!(9)),
            ("agents.echo.env", json!({"A": "1", "B": "2"})),
        ],
    );
    assert_eq!(
        out,
        "schema_version = 1\ndaemon.ask_timeout_secs = 5\ndaemon.upload_idle_secs = 9\n[agents.echo]\nbackend = \"echo\"\nenv = { A = \"1\", B = \"2\" }\n"
    );
    // A removed variable goes alone.
    let out = edited(text, &[("agents.echo.env", json!({}))]);
    assert_eq!(
        out,
        "schema_version = 1\ndaemon.ask_timeout_secs = 5\n[agents.echo]\nbackend = \"echo\"\nenv = {}\n"
    );
}

#[test]
fn a_pairing_change_writes_the_token_list_only() {
    let text = "# top\nschema_version = 1\n";
    let current = Config::from_toml_str(text).unwrap();
    let mut candidate = current.clone();
    candidate.gateway.paired_tokens = vec!["ab".repeat(32)];
    let out = edit_text(text, &current, &candidate, &[]).unwrap();
    assert_eq!(
        out,
        format!(
            "# top\nschema_version = 1\n\n[gateway]\npaired_tokens = [\"{}\"]\n",
            "ab".repeat(32)
        )
    );
}

#[test]
fn a_byte_order_mark_and_crlf_line_ends_are_kept() {
    let crlf = USER_FILE.replace('\n', "\r\n");
    let want = |text: &str| {
        text.replace("ask_timeout_secs = 60 #", "ask_timeout_secs = 90 #")
            .replace(
                "backend = \"echo\"\r\n",
                "backend = \"echo\"\r\nchunk_delay_ms = 5\r\n",
            )
    };
    let sets = [
        ("daemon.ask_timeout_secs", json!(90)),
        ("agents.alpha.chunk_delay_ms", json!(5)),
        ("agents.new.backend", json!("echo")),
    ];
    let new_entry = "\r\n[agents.new]\r\nbackend = \"echo\"\r\n";
    // CRLF alone, a BOM alone, both: the bytes stay the file's own spelling.
    let out = edited(&crlf, &sets);
    assert_eq!(out, format!("{}{new_entry}", want(&crlf)));
    let bom = format!("\u{feff}{USER_FILE}");
    let out = edited(&bom, &[("daemon.ask_timeout_secs", json!(90))]);
    assert_eq!(
        out,
        bom.replace("ask_timeout_secs = 60 #", "ask_timeout_secs = 90 #")
    );
    let both = format!("\u{feff}{crlf}");
    let out = edited(&both, &sets);
    assert_eq!(out, format!("{}{new_entry}", want(&both)));
    assert!(out.as_bytes().starts_with(b"\xEF\xBB\xBF"));
    assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
}

#[test]
fn a_file_that_does_not_parse_is_told_by_place_not_by_text() {
    let text = "schema_version = 1\nsecret = \"sk-live-abc\n";
    let current = Config::from_toml_str(Config::default_file_text()).unwrap();
    let e = edit_text(text, &current, &current, &[])
        .unwrap_err()
        .to_string();
    assert!(!e.contains("sk-live"), "{e}");
    assert!(e.contains("line 2, column"), "{e}");
}

#[test]
fn a_multi_line_value_in_a_crlf_file_loads_back_as_written() {
    let crlf = USER_FILE.replace('\n', "\r\n");
    let out = edited(
        &crlf,
        &[("agents.alpha.system_prompt", json!("one\ntwo\r\nthree"))],
    );
    assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
    assert!(
        out.ends_with("backend = \"echo\"\r\nsystem_prompt = \"one\\ntwo\\r\\nthree\"\r\n"),
        "{out:?}"
    );
    let back = Config::from_toml_str(&out).unwrap();
    assert_eq!(back.agents["alpha"].system_prompt, "one\ntwo\r\nthree");
}
