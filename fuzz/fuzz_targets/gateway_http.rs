//! What the gateway parses of an HTTP request itself, beside hyper and
//! axum (docs/gateway.md): the `Host` and `Origin` checks of the web
//! guard, `POST /rpc`'s bearer token, content type and body split, the
//! pairing header, and the per-source key of a peer's IP.
//!
//! Input layout: byte 0 picks TLS (bit 0) and whether the config lists the
//! first piece as an allowed host and origin (bit 1); bytes 1-16 are an IP
//! address (`Source::of` on it as IPv6 and on its first 4 bytes as IPv4);
//! the rest is split at `\0` into pieces: Host, Origin, Authorization,
//! Content-Type, the pairing header, and the `POST /rpc` body (the rest).
//!
//! Checked for every input: nothing panics; the Host check accepts exactly
//! IP literals, `localhost`, the configured host and allowed hosts (compared
//! lowercase, after removing a port); an Origin equal to the request's own
//! `<scheme>://<Host>` passes; a bearer token is the trimmed text after
//! `Bearer ` and never empty-schemed; a well-formed pairing code is 12
//! ASCII digits; the body split gives 1..=16 frames, each a JSON value (for
//! arrays) or the whole body, and a body over 16 elements is refused; every
//! loopback IP is one source, and an IPv4-mapped IPv6 address counts as the
//! IPv4 address.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use axum::http::{header, HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use zeroclaw::config::GatewayConfig;
use zeroclaw::gateway::fuzzing::{
    bearer, host_allowed, host_name, is_json, origin_allowed, split_body, Source,
};
use zeroclaw::gateway::{MAX_BATCH, PAIRING_CODE_HEADER};
use zeroclaw::state::well_formed;

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let (head, rest) = data.split_at(17);
    let tls = head[0] & 1 == 1;
    let mut ip = [0u8; 16];
    ip.copy_from_slice(&head[1..17]);
    check_source(ip);

    let mut pieces = rest.splitn(6, |b| *b == 0);
    let mut next = || pieces.next().unwrap_or_default();
    let (host, origin, auth, ctype, pairing, body) =
        (next(), next(), next(), next(), next(), next());

    let mut g = GatewayConfig::default();
    if head[0] & 2 == 2 {
        let first = String::from_utf8_lossy(host).into_owned();
        g.allowed_hosts = vec![host_name(&first).to_owned()];
        g.allowed_origins = vec![first];
    }
    check_host_origin(tls, &g, host, origin);
    check_headers(auth, ctype, pairing);
    check_body(body);
});

fn check_source(ip: [u8; 16]) {
    let v6 = Ipv6Addr::from(ip);
    let v4 = Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3]);
    let s6 = Source::of(IpAddr::V6(v6));
    let s4 = Source::of(IpAddr::V4(v4));
    let _ = (s6.to_string(), s4.to_string());
    if v4.is_loopback() || v6.is_loopback() {
        let s = if v4.is_loopback() { s4 } else { s6 };
        assert_eq!(s, Source::Loopback);
    }
    // An IPv4-mapped address is the IPv4 address it carries.
    let mapped = v4.to_ipv6_mapped();
    assert_eq!(Source::of(IpAddr::V6(mapped)), s4);
    // Every address of one /64 is one source (loopback `::1` aside).
    if !v6.is_loopback() && v6.to_ipv4_mapped().is_none() {
        let mut other = ip;
        other[15] ^= 1;
        let o = Ipv6Addr::from(other);
        if !o.is_loopback() {
            assert_eq!(Source::of(IpAddr::V6(o)), s6);
        }
    }
}

/// Header values hyper would accept: bytes `HeaderValue` takes, read as the
/// guard reads them (`to_str`).
fn header_text(b: &[u8]) -> Option<String> {
    let v = HeaderValue::from_bytes(b).ok()?;
    v.to_str().ok().map(str::to_owned)
}

fn check_host_origin(tls: bool, g: &GatewayConfig, host: &[u8], origin: &[u8]) {
    let Some(host) = header_text(host) else {
        return;
    };
    let allowed = host_allowed(tls, g, &host);
    let name = host_name(&host).to_ascii_lowercase();
    assert!(host.starts_with(host_name(&host)));
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    let want = bare.parse::<IpAddr>().is_ok()
        || name == "localhost"
        || name == g.host.to_ascii_lowercase()
        || g.allowed_hosts
            .iter()
            .any(|h| h.to_ascii_lowercase() == name);
    assert_eq!(allowed, want, "host {host:?}");
    // A page served under this Host may call back (hyper trims a header
    // value's outer whitespace, and a Host never ends with `/`).
    let scheme = if tls { "https" } else { "http" };
    let own = format!("{scheme}://{host}");
    if allowed && !host.is_empty() && host == host.trim() && !host.ends_with('/') {
        assert!(
            origin_allowed(tls, g, &own, Some(&host)),
            "own origin {own:?}"
        );
    }
    if let Some(origin) = header_text(origin) {
        let ok = origin_allowed(tls, g, &origin, Some(&host));
        let without_host = origin_allowed(tls, g, &origin, None);
        // Knowing the request's Host can only add its own origin.
        assert!(ok || !without_host);
        if g.allowed_origins.is_empty() {
            assert!(!without_host, "origin {origin:?} with nothing allowed");
        }
    }
}

fn check_headers(auth: &[u8], ctype: &[u8], pairing: &[u8]) {
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_bytes(auth) {
        h.insert(header::AUTHORIZATION, v);
    }
    if let Ok(v) = HeaderValue::from_bytes(ctype) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Some(token) = bearer(&h) {
        let v = h[header::AUTHORIZATION].to_str().unwrap();
        let (scheme, _) = v.trim().split_once(' ').unwrap();
        assert!(scheme.eq_ignore_ascii_case("bearer"));
        assert_eq!(token, token.trim());
        assert!(v.contains(&token));
    }
    if is_json(&h) {
        let v = h[header::CONTENT_TYPE].to_str().unwrap();
        assert!(v.to_ascii_lowercase().contains("application/json"));
    }
    if let Ok(v) = HeaderValue::from_bytes(pairing) {
        let mut p = HeaderMap::new();
        p.insert(PAIRING_CODE_HEADER, v);
        if let Some(code) = p
            .get(PAIRING_CODE_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(well_formed)
        {
            assert_eq!(code.len(), 12);
            assert!(code.bytes().all(|b| b.is_ascii_digit()));
        }
    }
}

fn check_body(body: &[u8]) {
    let parsed = serde_json::from_slice::<Vec<Box<RawValue>>>(body).ok();
    match split_body(body) {
        None => {
            assert!(parsed.is_some_and(|items| items.len() > MAX_BATCH));
        }
        Some((frames, batch)) => {
            assert!((1..=MAX_BATCH).contains(&frames.len()));
            match parsed {
                Some(items) if !items.is_empty() => {
                    assert!(batch);
                    assert_eq!(frames.len(), items.len());
                    for f in &frames {
                        // Each element is one JSON value on its own.
                        serde_json::from_str::<&RawValue>(f).expect("an element is JSON");
                    }
                }
                _ => {
                    assert_eq!(frames.len(), 1);
                    assert_eq!(frames[0], String::from_utf8_lossy(body));
                    assert_eq!(batch, body.trim_ascii_start().first() == Some(&b'['));
                }
            }
        }
    }
}
