//! Claiming over the real filesystem and real sockets (§2.3): every outcome
//! of the probe, the modes, release's inode check, and peer credentials.

use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::test_support::TempDir;
use super::*;

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("lstat").mode() & 0o7777
}

fn ino(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).expect("lstat").ino()
}

fn sock_of(data: &Path) -> (PathBuf, EndpointName) {
    let path = data.join("daemon.sock");
    (path.clone(), EndpointName::Path(path))
}

async fn claim_default(data: &Path) -> Result<Claimed, EndpointError> {
    let (_, endpoint) = sock_of(data);
    claim(data, &endpoint, &ClaimOptions::default()).await
}

/// Connects a client and accepts it, proving the listener serves.
async fn round_trip(claimed: &Claimed, endpoint: &EndpointName) -> PeerInfo {
    let client = connect(endpoint).await.expect("connect");
    let (server, peer) = claimed.accept().await.expect("accept");
    let (mut sr, mut sw) = split(server);
    let (mut cr, mut cw) = split(client);
    cw.write_all(b"ping\n").await.expect("client write");
    cw.shutdown().await.expect("client half-close");
    let mut got = Vec::new();
    sr.read_to_end(&mut got).await.expect("server read");
    assert_eq!(got, b"ping\n");
    sw.write_all(b"pong\n").await.expect("server write");
    sw.shutdown().await.expect("server half-close");
    let mut got = Vec::new();
    cr.read_to_end(&mut got).await.expect("client read");
    assert_eq!(got, b"pong\n");
    peer
}

#[tokio::test]
async fn claim_binds_a_0600_socket_in_a_0700_dir() {
    let tmp = TempDir::new("claim");
    let data = tmp.path().join("cfg/data");
    let (sock, endpoint) = sock_of(&data);
    let claimed = claim(&data, &endpoint, &ClaimOptions::default())
        .await
        .expect("claim");
    assert!(std::fs::symlink_metadata(&sock)
        .expect("lstat")
        .file_type()
        .is_socket());
    assert_eq!(mode(&sock), 0o600);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(
        mode(&tmp.path().join("cfg")),
        0o700,
        "created ancestors are 0700 too"
    );
    assert_eq!(mode(&data.join("daemon.lock")), 0o600);
    assert_eq!(mode(&data.join("daemon.sock.lock")), 0o600);
    assert_eq!(claimed.endpoint_display(), sock.display().to_string());
    round_trip(&claimed, &endpoint).await;
    claimed.release();
    assert!(!sock.exists(), "release unlinks our socket");
    assert!(data.join("daemon.lock").exists() && data.join("daemon.sock.lock").exists());
}

#[tokio::test]
async fn a_second_claim_fails_with_3_while_the_first_keeps_serving() {
    let tmp = TempDir::new("twice");
    let data = tmp.path().join("data");
    let (_, endpoint) = sock_of(&data);
    let first = claim_default(&data).await.expect("first claim");

    let err = claim_default(&data).await.expect_err("second claim");
    assert_eq!(err.exit_code(), 3);
    assert!(
        matches!(err, EndpointError::AlreadyServed(Served::DataDir(_))),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("is already served by another daemon"),
        "{err}"
    );

    // Another data dir pointed at the same socket (ZEROCLAW_SOCKET) meets the
    // lifecycle lock instead.
    let other = tmp.path().join("other");
    let err = claim(&other, &endpoint, &ClaimOptions::default())
        .await
        .expect_err("same socket");
    assert_eq!(err.exit_code(), 3);
    assert!(
        err.to_string().starts_with("endpoint already owned"),
        "{err}"
    );

    round_trip(&first, &endpoint).await;
}

#[tokio::test]
async fn a_stale_socket_is_replaced() {
    let tmp = TempDir::new("stale");
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let (sock, endpoint) = sock_of(&data);
    drop(StdUnixListener::bind(&sock).expect("bind stale"));
    // std binds with 0777 & !umask; ours is 0600, which tells the two apart
    // (tmpfs may hand the new socket the old inode number).
    assert_ne!(mode(&sock), 0o600);

    let claimed = claim_default(&data).await.expect("claim over stale socket");
    assert_eq!(mode(&sock), 0o600, "a new socket was bound");
    round_trip(&claimed, &endpoint).await;
}

#[tokio::test]
async fn anything_but_a_socket_is_refused_and_left_untouched() {
    let tmp = TempDir::new("notsock");
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let (sock, _) = sock_of(&data);

    std::fs::write(&sock, b"precious").expect("write");
    let err = claim_default(&data).await.expect_err("regular file");
    assert!(
        matches!(&err, EndpointError::NotASocket(p) if *p == sock),
        "{err}"
    );
    assert_eq!(err.exit_code(), 1);
    assert_eq!(
        err.to_string(),
        format!("`{}` exists and is not a socket", sock.display())
    );
    assert_eq!(std::fs::read(&sock).expect("still there"), b"precious");
    std::fs::remove_file(&sock).expect("rm");

    let target = tmp.path().join("target");
    std::fs::write(&target, b"t").expect("write");
    symlink(&target, &sock).expect("symlink");
    let err = claim_default(&data).await.expect_err("symlink");
    assert!(matches!(err, EndpointError::NotASocket(_)), "{err}");
    assert_eq!(std::fs::read_link(&sock).expect("link kept"), target);
    std::fs::remove_file(&sock).expect("rm");

    // A symlink to a live socket is still a symlink: never followed.
    let live_path = tmp.path().join("live.sock");
    let _live = StdUnixListener::bind(&live_path).expect("bind");
    symlink(&live_path, &sock).expect("symlink");
    let err = claim_default(&data).await.expect_err("symlink to socket");
    assert!(matches!(err, EndpointError::NotASocket(_)), "{err}");
    std::fs::remove_file(&sock).expect("rm");

    std::fs::create_dir(&sock).expect("mkdir");
    std::fs::write(sock.join("inside"), b"i").expect("write");
    let err = claim_default(&data).await.expect_err("directory");
    assert!(matches!(err, EndpointError::NotASocket(_)), "{err}");
    assert_eq!(std::fs::read(sock.join("inside")).expect("kept"), b"i");
}

#[tokio::test]
async fn a_live_foreign_listener_means_already_serving() {
    let tmp = TempDir::new("live");
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    let (sock, _) = sock_of(&data);
    let foreign = StdUnixListener::bind(&sock).expect("bind");
    let before = ino(&sock);

    let err = claim_default(&data).await.expect_err("live listener");
    assert_eq!(err.exit_code(), 3);
    assert_eq!(
        err.to_string(),
        format!("endpoint is already serving at `{}`", sock.display())
    );
    assert_eq!(ino(&sock), before, "the live socket is never unlinked");
    foreign.set_nonblocking(true).expect("nonblocking");
    assert!(
        foreign.accept().is_ok(),
        "the probe's connection reached the foreign listener"
    );
}

#[tokio::test]
async fn release_leaves_a_replacement_socket_alone() {
    let tmp = TempDir::new("replace");
    let data = tmp.path().join("data");
    let (sock, endpoint) = sock_of(&data);
    let claimed = claim_default(&data).await.expect("claim");
    let ours = ino(&sock);

    std::fs::remove_file(&sock).expect("rm ours");
    let replacement = StdUnixListener::bind(&sock).expect("bind replacement");
    assert_ne!(ino(&sock), ours);
    claimed.release();
    assert!(sock.exists(), "a replacement endpoint is never removed");
    connect(&endpoint)
        .await
        .expect("replacement still reachable");
    drop(replacement);

    // The lifecycle lock was released: a new claim (own data dir) works once
    // the replacement is dead, replacing it as stale.
    let other = tmp.path().join("other");
    claim(&other, &endpoint, &ClaimOptions::default())
        .await
        .expect("claim after release");
}

#[tokio::test]
async fn peer_info_has_our_uid_and_pid() {
    let tmp = TempDir::new("peer");
    let data = tmp.path().join("data");
    let (_, endpoint) = sock_of(&data);
    let claimed = claim_default(&data).await.expect("claim");
    let peer = round_trip(&claimed, &endpoint).await;
    let uid = lock::euid();
    let pid = std::process::id();
    assert_eq!(peer.uid, Some(uid));
    assert_eq!(peer.pid, Some(pid));
    assert_eq!(peer.label, format!("unix:pid={pid},uid={uid}"));
}

#[tokio::test]
async fn too_long_a_path_fails_before_touching_anything() {
    let tmp = TempDir::new("long");
    let data = tmp.path().join("d".repeat(SUN_PATH_MAX));
    let err = claim_default(&data).await.expect_err("too long");
    assert!(
        matches!(
            err,
            EndpointError::PathTooLong {
                limit: SUN_PATH_MAX,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.exit_code(), 1);
    assert!(err.to_string().contains("daemon.sock"), "{err}");
    assert!(!data.exists());
}

#[tokio::test]
async fn unknown_socket_group_fails_with_1_naming_it() {
    let tmp = TempDir::new("nogroup");
    let data = tmp.path().join("data");
    let (_, endpoint) = sock_of(&data);
    let opts = ClaimOptions {
        socket_group: Some("zeroclaw-no-such-group".into()),
    };
    let err = claim(&data, &endpoint, &opts)
        .await
        .expect_err("unknown group");
    assert_eq!(err.exit_code(), 1);
    assert!(err.to_string().contains("zeroclaw-no-such-group"), "{err}");
    assert!(!data.exists(), "nothing is created for a bad config");
}

/// The name of a group this process may hand files to (its effective group).
fn own_group() -> Option<(String, Gid)> {
    // SAFETY: getegid has no preconditions and cannot fail.
    let gid = unsafe { libc::getegid() };
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: Gid = fields.nth(1)?.parse().ok()?;
        (id == gid).then(|| (name.to_owned(), id))
    })
}

#[tokio::test]
async fn socket_group_gives_0660_socket_in_0750_dir() {
    let Some((name, gid)) = own_group() else {
        return;
    };
    assert_eq!(lookup_group(&name).expect("lookup"), gid);
    let tmp = TempDir::new("group");
    let data = tmp.path().join("data");
    let (sock, endpoint) = sock_of(&data);
    let opts = ClaimOptions {
        socket_group: Some(name),
    };
    let claimed = claim(&data, &endpoint, &opts)
        .await
        .expect("claim with group");
    assert_eq!(mode(&sock), 0o660);
    assert_eq!(std::fs::symlink_metadata(&sock).expect("lstat").gid(), gid);
    assert_eq!(mode(&data), 0o750);
    assert_eq!(std::fs::metadata(&data).expect("stat").gid(), gid);
    assert_eq!(
        mode(&data.join("daemon.sock.lock")),
        0o600,
        "locks stay owner-only"
    );
    round_trip(&claimed, &endpoint).await;
}

#[tokio::test]
async fn a_pre_existing_socket_dir_outside_the_data_dir_keeps_its_mode() {
    let tmp = TempDir::new("shared");
    let data = tmp.path().join("data");
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let endpoint = EndpointName::Path(shared.join("zc.sock"));
    let claimed = claim(&data, &endpoint, &ClaimOptions::default())
        .await
        .expect("sticky dir");
    assert_eq!(mode(&shared), 0o1777, "like /tmp: never narrowed");
    assert_eq!(mode(&shared.join("zc.sock")), 0o600);
    assert_eq!(mode(&data), 0o700);
    round_trip(&claimed, &endpoint).await;
    claimed.release();

    // Group/other-writable without the sticky bit: refused, mode untouched.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let other = tmp.path().join("data2");
    let err = claim(&other, &endpoint, &ClaimOptions::default())
        .await
        .expect_err("unsafe dir");
    assert!(
        matches!(&err, EndpointError::UnsafeLock { path, .. } if *path == shared),
        "{err}"
    );
    assert_eq!(mode(&shared), 0o777);

    // A socket dir the daemon creates outside the data dir gets 0700.
    let created = tmp.path().join("made/here");
    let endpoint = EndpointName::Path(created.join("zc.sock"));
    let _c = claim(
        &tmp.path().join("data3"),
        &endpoint,
        &ClaimOptions::default(),
    )
    .await
    .expect("created dir");
    assert_eq!(mode(&created), 0o700);
    assert_eq!(mode(&tmp.path().join("made")), 0o700);
}

#[test]
fn ensure_dirs_sets_modes_only_where_it_may() {
    let tmp = TempDir::new("ensure");
    let cwd = tmp.path();
    let env = |_: &str| None;
    let dirs = resolve_dirs(Some("cfg".as_ref()), env, cwd, None).expect("resolve");
    ensure_dirs(&dirs, None).expect("create");
    assert_eq!(mode(&dirs.config_dir), 0o700);
    assert_eq!(mode(&dirs.data_dir), 0o700);

    // A pre-existing config dir keeps its mode; the data dir is always ours.
    std::fs::set_permissions(&dirs.config_dir, std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::fs::set_permissions(&dirs.data_dir, std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    ensure_dirs(&dirs, None).expect("again");
    assert_eq!(mode(&dirs.config_dir), 0o755);
    assert_eq!(mode(&dirs.data_dir), 0o700);
}

#[tokio::test]
async fn release_keeps_the_data_dir_lock_release_all_drops_it() {
    let tmp = TempDir::new("relock");
    let data = tmp.path().join("data");
    claim_default(&data).await.expect("claim").release();
    let err = claim_default(&data)
        .await
        .expect_err("data-dir lock held until exit");
    assert!(
        matches!(err, EndpointError::AlreadyServed(Served::DataDir(_))),
        "{err}"
    );

    let data2 = tmp.path().join("data2");
    claim_default(&data2).await.expect("claim").release_all();
    let again = claim_default(&data2)
        .await
        .expect("claim after release_all");
    again.release_all();
}

#[test]
fn racing_claims_on_one_socket_have_exactly_one_winner() {
    let tmp = TempDir::new("race");
    let shared = tmp.path().join("run");
    let endpoint = EndpointName::Path(shared.join("zc.sock"));
    let contenders = 4;
    let barrier = std::sync::Barrier::new(contenders);
    let outcomes: Vec<Result<(), i32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..contenders)
            .map(|i| {
                let (data, endpoint, barrier) =
                    (tmp.path().join(format!("d{i}")), &endpoint, &barrier);
                scope.spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    barrier.wait();
                    let result = rt.block_on(claim(&data, endpoint, &ClaimOptions::default()));
                    // Hold the winner's claim until every contender has tried.
                    barrier.wait();
                    result.map(drop).map_err(|e| e.exit_code())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1,
        "{outcomes:?}"
    );
    assert!(
        outcomes.iter().all(|o| matches!(o, Ok(()) | Err(3))),
        "{outcomes:?}"
    );
}
