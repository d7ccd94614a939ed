//! In-process costs of the protocol core (no socket, no runtime):
//! - `classify`: parsing and classifying one frame (a `status` request, an
//!   `initialize` request, a response to a daemon request, invalid frames),
//!   and, as the same-run reference, `serde_status_request`: serde_json
//!   reading the `status` request into the borrowed struct `e2e_load`'s
//!   baseline servers use (what a minimal server pays for the same frame);
//! - `frame_codec`: the bounded line codec splitting a buffer of many frames;
//! - `write`: building outbound frames with `Payload` and `error_frame`.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde::Serialize;
use tokio_util::codec::Decoder;
use zeroclaw::codec::FrameCodec;
use zeroclaw::dialect::Dialect;
use zeroclaw::error::{LimitName, RpcError};
use zeroclaw::jsonrpc::{classify, error_frame, Classified, Payload};

#[path = "e2e_load/minimal_request.rs"]
mod minimal_request;
use minimal_request::MinimalRequest;

const STATUS: &str = r#"{"jsonrpc":"2.0","method":"status","id":17}"#;
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}},"authProvider":"native"},"id":"init-1"}"#;
const RESPONSE: &str =
    r#"{"jsonrpc":"2.0","result":{"action":"accept","content":{"choice":"yes"}},"id":"zc-out-3"}"#;
/// Truncated JSON: `-32700`.
const INVALID_JSON: &str = r#"{"jsonrpc":"2.0","method":"status","id":1"#;
/// Valid JSON, invalid envelope (`jsonrpc` missing): `-32600` with the id echoed.
const INVALID_ENVELOPE: &str = r#"{"method":"status","params":{},"id":5}"#;

fn classify_frames(c: &mut Criterion) {
    let mut g = c.benchmark_group("classify");
    for (name, frame) in [
        ("status_request", STATUS),
        ("initialize_request", INITIALIZE),
        ("response", RESPONSE),
        ("invalid_json", INVALID_JSON),
        ("invalid_envelope", INVALID_ENVELOPE),
    ] {
        // Make sure each frame is what its name says before timing it.
        let kind = match classify(frame) {
            Classified::Request { .. } => "request",
            Classified::Response { .. } => "response",
            Classified::Reply { .. } => "reply",
            Classified::Drop { .. } => "drop",
        };
        let expected = match name {
            "response" => "response",
            "invalid_json" | "invalid_envelope" => "reply",
            _ => "request",
        };
        assert_eq!(kind, expected, "{name}");
        g.throughput(Throughput::Bytes(frame.len() as u64));
        g.bench_function(name, |b| b.iter(|| black_box(classify(black_box(frame)))));
    }
    g.throughput(Throughput::Bytes(STATUS.len() as u64));
    g.bench_function("serde_status_request", |b| {
        b.iter(|| black_box(serde_json::from_str::<MinimalRequest<'_>>(black_box(STATUS)).ok()))
    });
    g.finish();
}

fn frame_codec(c: &mut Criterion) {
    const FRAMES: usize = 1000;
    let mut stream = BytesMut::new();
    for i in 0..FRAMES {
        // Mixed sizes, one CRLF in ten, as a pipelining client sends them.
        if i % 10 == 0 {
            stream.extend_from_slice(INITIALIZE.as_bytes());
            stream.extend_from_slice(b"\r\n");
        } else {
            stream.extend_from_slice(STATUS.as_bytes());
            stream.extend_from_slice(b"\n");
        }
    }
    let mut g = c.benchmark_group("frame_codec");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.bench_function("decode_1000_frames", |b| {
        b.iter_batched_ref(
            || (FrameCodec::default(), stream.clone()),
            |(codec, buf)| {
                let mut n = 0;
                while let Some(frame) = codec.decode(buf).expect("valid frames") {
                    n += 1;
                    black_box(frame);
                }
                assert_eq!(n, FRAMES);
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// The shape of the `status` result (§8.2), as `services/status.rs` writes it.
#[derive(Serialize)]
struct StatusLike<'a> {
    server_version: &'static str,
    protocol_version: u32,
    server_pid: u32,
    uptime_secs: u64,
    principal_id: &'a str,
    active_sessions: usize,
    session_ids: &'a [String],
    connections: usize,
    ephemeral: bool,
    config_dir: &'a str,
    config_file: &'a str,
    data_dir: &'a str,
    local_ipc_endpoint: &'a str,
}

/// A camelCase result, to compare the two dialects' serializers.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeLike<'a> {
    protocol_version: u32,
    server_version: &'static str,
    server_pid: u32,
    principal_id: &'a str,
    auth_methods: &'a [&'a str],
    transport: &'a str,
    capabilities: &'a [&'a str],
}

fn write_frames(c: &mut Criterion) {
    let status = StatusLike {
        server_version: "0.1.0",
        protocol_version: 1,
        server_pid: 4242,
        uptime_secs: 12,
        principal_id: "shared-operator",
        active_sessions: 0,
        session_ids: &[],
        connections: 1,
        ephemeral: false,
        config_dir: "/home/me/.zeroclaw",
        config_file: "/home/me/.zeroclaw/config.toml",
        data_dir: "/home/me/.zeroclaw/data",
        local_ipc_endpoint: "/home/me/.zeroclaw/data/daemon.sock",
    };
    let init = InitializeLike {
        protocol_version: 1,
        server_version: "0.1.0",
        server_pid: 4242,
        principal_id: "shared-operator",
        auth_methods: &["native", "peercred"],
        transport: "local",
        capabilities: &["initialize", "status", "config/get", "config/set"],
    };
    let method_not_found = RpcError::MethodNotFound("session/frobnicate".into());
    let limit = RpcError::LimitExceeded {
        limit: LimitName::RequestsInFlight,
        max: 64,
    };

    let mut g = c.benchmark_group("write");
    g.bench_function("payload_empty_object", |b| {
        b.iter(|| black_box(Payload::empty_object().into_frame(black_box(&b"17"[..]))))
    });
    g.bench_function("payload_status_result", |b| {
        b.iter(|| {
            let p = Payload::new(black_box(&status), Dialect::Camel).expect("serializable");
            black_box(p.into_frame(black_box(&b"17"[..])))
        })
    });
    g.bench_function("payload_initialize_result_camel", |b| {
        b.iter(|| {
            let p = Payload::new(black_box(&init), Dialect::Camel).expect("serializable");
            black_box(p.into_frame(black_box(&b"\"init-1\""[..])))
        })
    });
    g.bench_function("payload_initialize_result_snake", |b| {
        b.iter(|| {
            let p = Payload::new(black_box(&init), Dialect::Snake).expect("serializable");
            black_box(p.into_frame(black_box(&b"\"init-1\""[..])))
        })
    });
    g.bench_function("error_frame_method_not_found", |b| {
        b.iter(|| black_box(error_frame(black_box(&method_not_found), Some("17"))))
    });
    g.bench_function("error_frame_limit_with_data", |b| {
        b.iter(|| black_box(error_frame(black_box(&limit), Some("17"))))
    });
    g.bench_function("error_frame_frame_too_large", |b| {
        b.iter(|| black_box(error_frame(black_box(&RpcError::FrameTooLarge), None)))
    });
    g.finish();
}

criterion_group!(benches, classify_frames, frame_codec, write_frames);
criterion_main!(benches);
