//! Claiming a named pipe (§2.4) on a real Windows runner: the data-dir lock,
//! first-instance semantics and the `pipe:local` label. Compiled only on
//! Windows.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::test_support::TempDir;
use super::*;

fn unique_pipe(tag: &str) -> EndpointName {
    EndpointName::Pipe(format!(
        r"\\.\pipe\zeroclaw-test-{tag}-{}",
        std::process::id()
    ))
}

#[tokio::test]
async fn claim_serves_and_a_second_claim_fails_with_3() {
    let tmp = TempDir::new("pipe");
    let data = tmp.path().join("data");
    let endpoint = unique_pipe("twice");
    let first = claim(&data, &endpoint, &ClaimOptions::default())
        .await
        .expect("claim");

    let err = claim(&data, &endpoint, &ClaimOptions::default())
        .await
        .expect_err("same data dir");
    assert!(
        matches!(err, EndpointError::AlreadyServed(Served::DataDir(_))),
        "{err}"
    );
    assert_eq!(err.exit_code(), 3);

    let other = tmp.path().join("other");
    let err = claim(&other, &endpoint, &ClaimOptions::default())
        .await
        .expect_err("same pipe");
    assert!(
        matches!(err, EndpointError::AlreadyServed(Served::Serving(_))),
        "{err}"
    );
    assert_eq!(err.exit_code(), 3);

    let client = connect(&endpoint).await.expect("connect");
    let (server, peer) = first.accept().await.expect("accept");
    assert_eq!(peer.label, "pipe:local");
    assert_eq!(peer.uid, None);
    let (mut sr, _sw) = split(server);
    let (_cr, mut cw) = split(client);
    cw.write_all(b"ping\n").await.expect("write");
    let mut buf = [0u8; 5];
    sr.read_exact(&mut buf).await.expect("read");
    assert_eq!(&buf, b"ping\n");
}
