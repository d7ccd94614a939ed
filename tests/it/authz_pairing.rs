//! Pairing tokens on the local endpoint (§5.2 `authToken`, §6.5 step 1,
//! §6.7, §8.19): creation through the config commit path, digests in
//! `config.toml`, masking in `config/get`, binding and revocation.

// Unix only: one test needs the peer's uid refused under trust_daemon_uid = false (a pipe carries no uid).

use crate::common;
use common::assert::{assert_error_exact, err_of};
use common::errors::{credential_rejected, not_initialized};
use common::start::write_config;

use common::users::{config_bytes, digest, initialize, new_token, ADMIN_TOKEN};
use common::{Daemon, TestDir};
use serde_json::{json, Value};
use zeroclaw::config::Config;

fn file_config(d: &Daemon) -> Config {
    let text = String::from_utf8(config_bytes(&d.config_dir)).expect("UTF-8");
    Config::from_toml_str(&text).expect("config.toml is valid")
}

fn is_token(t: &str) -> bool {
    t.len() == 67
        && t.starts_with("zc_")
        && t[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn a_created_token_is_stored_as_its_digest_masked_and_binds_the_shared_operator() {
    let (d, mut admin) = Daemon::with_client();
    let created = admin.ok("pairing/create", json!({}));
    let token = created["token"].as_str().unwrap().to_owned();
    assert!(is_token(&token), "{created}");
    assert_eq!(created["token_hash"], digest(&token), "{created}");
    assert_eq!(
        created.as_object().unwrap().len(),
        2,
        "token and token_hash only: {created}"
    );

    // Only the digest is persisted, and reads mask it.
    let text = String::from_utf8(config_bytes(&d.config_dir)).unwrap();
    assert!(
        !text.contains(&token[3..]),
        "the token itself is not stored"
    );
    assert_eq!(file_config(&d).gateway.paired_tokens, [digest(&token)]);
    let all = admin.ok("config/get", json!({}));
    assert_eq!(all["gateway"]["paired_tokens"], json!(["****"]), "{all}");
    assert!(!all.to_string().contains(&digest(&token)), "{all}");
    let one = admin.ok("config/get", json!({"prop": "gateway.paired_tokens"}));
    assert_eq!(
        one,
        json!({"prop": "gateway.paired_tokens", "value": ["****"]})
    );
    assert_eq!(
        admin.ok("pairing/list", json!({})),
        json!({"token_hashes": [digest(&token)]})
    );
    // The list is managed by pairing/* only, even for an admin.
    let v = admin.call_frame(
        "config/set",
        json!({"prop": "gateway.paired_tokens", "value": []}),
    );
    assert_error_exact(
        &err_of(&v),
        -32602,
        Some("gateway.paired_tokens: read-only prop; use pairing/*"),
        Some(json!({"prop": "gateway.paired_tokens"})),
    );

    // The token binds the shared operator, with or without the explicit provider.
    for params in [
        json!({"protocolVersion": 1, "authToken": token}),
        json!({"protocolVersion": 1, "authToken": token, "authProvider": "native"}),
    ] {
        let mut c = d.connect();
        let v = c.call_frame("initialize", params);
        assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");
    }
    // The log is written behind the answers: wait for the line (bounded).
    let native = d.log.wait_for(0, common::RECV_TIMEOUT, |e| {
        e["event"] == "principal_bound" && e["auth_provider"] == "native"
    });
    assert!(
        native.is_some(),
        "{:?}",
        d.log.events_named("principal_bound")
    );
}

#[test]
fn revoking_a_token_fails_the_next_request_of_its_connections() {
    let (d, mut admin) = Daemon::with_client();
    let token = new_token(&mut admin);
    let other = new_token(&mut admin);
    let mut t1 = d.connect();
    assert_eq!(
        initialize(&mut t1, Some(&token))["result"]["principalId"],
        "shared-operator"
    );
    let mut t2 = d.connect();
    assert_eq!(
        initialize(&mut t2, Some(&other))["result"]["principalId"],
        "shared-operator"
    );
    t1.ok("status", json!({}));

    assert_eq!(
        admin.ok("pairing/revoke", json!({"token": token})),
        json!({"revoked": true})
    );
    assert_eq!(file_config(&d).gateway.paired_tokens, [digest(&other)]);
    assert_error_exact(
        &t1.fails("status", json!({})),
        -32010,
        Some("Pairing token revoked: re-pair and re-initialize"),
        Some(json!({"reason": "token_revoked"})),
    );
    not_initialized(&t1.fails("status", json!({})));
    let v = initialize(&mut t1, Some(&token));
    credential_rejected(&err_of(&v));
    // The other token's connection is unaffected by the generation change.
    t2.ok("status", json!({}));

    // Revoking what is not paired commits nothing.
    let before = config_bytes(&d.config_dir);
    assert_eq!(
        admin.ok("pairing/revoke", json!({"token": token})),
        json!({"revoked": false})
    );
    assert_eq!(config_bytes(&d.config_dir), before);
    // By digest, in any case.
    assert_eq!(
        admin.ok(
            "pairing/revoke",
            json!({"token_hash": digest(&other).to_ascii_uppercase()})
        ),
        json!({"revoked": true})
    );
    let v = t2.call_frame("status", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "token_revoked", "{v}");
    assert_eq!(
        admin.ok("pairing/list", json!({})),
        json!({"token_hashes": []})
    );
    for params in [
        json!({}),
        json!({"token": other, "token_hash": digest(&other)}),
    ] {
        let v = admin.call_frame("pairing/revoke", params);
        assert_eq!(v["error"]["code"], -32602, "{v}");
    }
    let dropped = d.log.events_named("binding_dropped");
    assert!(
        dropped.iter().any(|e| e["reason"] == "token_revoked"),
        "{dropped:?}"
    );
}

#[test]
fn bad_credentials_are_rejected_without_falling_back_to_the_uid() {
    let (d, mut admin) = Daemon::with_client();
    let token = new_token(&mut admin);
    let cases: [(Value, &str, &str); 4] = [
        (
            json!({"protocolVersion": 1, "authToken": token, "authProvider": "oauth"}),
            "Unknown auth provider",
            "unknown_auth_provider",
        ),
        (
            json!({"protocolVersion": 1, "authToken": format!("zc_{}", "ab".repeat(32))}),
            "Credential rejected",
            "credential_rejected",
        ),
        (
            json!({"protocolVersion": 1, "authToken": "not-a-token"}),
            "Credential rejected",
            "credential_rejected",
        ),
        (
            // The digest itself is not the token.
            json!({"protocolVersion": 1, "authToken": digest(&token)}),
            "Credential rejected",
            "credential_rejected",
        ),
    ];
    for (params, message, reason) in cases {
        // The uid of this connection is trusted, but a presented token is
        // the credential (no fallback, §5.2).
        let mut c = d.connect();
        assert_error_exact(
            &c.fails("initialize", params.clone()),
            -32010,
            Some(message),
            Some(json!({"reason": reason})),
        );
        let v = c.call_frame("status", json!({}));
        assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");
        // On a bound connection, the failure unbinds it (§5.3).
        let mut bound = d.client();
        let v = bound.call_frame("initialize", params);
        assert_eq!(v["error"]["data"]["reason"], reason, "{v}");
        let v = bound.call_frame("status", json!({}));
        assert_eq!(v["error"]["data"]["reason"], "not_initialized", "{v}");
    }
}

#[test]
fn a_seeded_token_is_the_only_way_in_when_the_uid_is_not_trusted() {
    let dir = TestDir::new();
    let text = format!(
        "schema_version = 1\n[security]\ntrust_daemon_uid = false\n[gateway]\npaired_tokens = [\"{}\"]\n[agents.echo]\nbackend = \"echo\"\n",
        digest(ADMIN_TOKEN).to_ascii_uppercase()
    );
    write_config(&dir.config_dir(), &text);
    let d = Daemon::builder().config_dir(dir.config_dir()).spawn();
    let mut c = d.connect();
    let v = initialize(&mut c, None);
    assert_eq!(v["error"]["data"]["reason"], "credential_rejected", "{v}");
    // Digests compare case-insensitively.
    let v = initialize(&mut c, Some(ADMIN_TOKEN));
    assert_eq!(v["result"]["principalId"], "shared-operator", "{v}");
    // A connection may revoke its own token: the answer still comes, then
    // the binding is gone.
    assert_eq!(
        c.ok("pairing/revoke", json!({"token": ADMIN_TOKEN})),
        json!({"revoked": true})
    );
    let v = c.call_frame("status", json!({}));
    assert_eq!(v["error"]["data"]["reason"], "token_revoked", "{v}");
    let v = initialize(&mut c, Some(ADMIN_TOKEN));
    assert_eq!(v["error"]["data"]["reason"], "credential_rejected", "{v}");
}
