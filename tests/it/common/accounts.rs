//! Real OS users and groups for the authorization tests, and connecting to
//! the daemon as another uid (Unix only: `useradd`, `SO_PEERCRED`,
//! descriptors passed over a socket). Re-exported by `users.rs`.
//!
//! Real accounts need root and the shadow tools (`groupadd`, `useradd`,
//! `userdel`, `groupdel`). [`Accounts::new`] says why they are unavailable,
//! and the tests then skip with a printed message. Accounts are named
//! `zct<pid>g<n>` / `zct<pid>u<n>` and removed when the [`Accounts`] guard
//! drops, also when the test panics.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;

use super::{euid, Client};

// ---------------------------------------------------------------------------
// Accounts

/// One account tool at a time in this process (the tools lock /etc/passwd
/// and fail rather than wait when it is held).
static TOOLS: Mutex<()> = Mutex::new(());
static SEQ: AtomicU32 = AtomicU32::new(0);

/// An OS group created for a test.
#[derive(Debug, Clone)]
pub struct OsGroup {
    pub name: String,
    pub gid: u32,
}

/// An OS user created for a test.
#[derive(Debug, Clone)]
pub struct OsUser {
    pub name: String,
    pub uid: u32,
    /// Its primary group.
    pub gid: u32,
}

/// The accounts of one test; removed on drop.
#[derive(Debug)]
pub struct Accounts {
    tools: [PathBuf; 4],
    users: Vec<String>,
    groups: Vec<String>,
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

impl Accounts {
    /// The guard, or why real accounts cannot be used here.
    pub fn new() -> Result<Accounts, String> {
        if euid() != 0 {
            return Err(format!(
                "creating OS users needs root (running as uid {})",
                euid()
            ));
        }
        let find = |n: &str| find_tool(n).ok_or_else(|| format!("`{n}` is not installed"));
        Ok(Accounts {
            tools: [
                find("groupadd")?,
                find("useradd")?,
                find("userdel")?,
                find("groupdel")?,
            ],
            users: Vec::new(),
            groups: Vec::new(),
        })
    }

    fn next_name(kind: char) -> String {
        format!(
            "zct{}{kind}{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Creates a new group.
    pub fn group(&mut self) -> OsGroup {
        let name = Self::next_name('g');
        run_tool(&self.tools[0], &[name.as_str()]);
        self.groups.push(name.clone());
        let gid = group_gid(&name);
        OsGroup { name, gid }
    }

    /// Creates a new user without a home directory and without a login
    /// shell, whose primary group is `group` (or the system default group).
    pub fn user(&mut self, group: Option<&OsGroup>) -> OsUser {
        let name = Self::next_name('u');
        let mut args = vec!["-M", "-N", "-d", "/nonexistent", "-s", "/bin/false"];
        if let Some(g) = group {
            args.extend(["-g", g.name.as_str()]);
        }
        args.push(&name);
        run_tool(&self.tools[1], &args);
        self.users.push(name.clone());
        let uid = id_number(&name, "-u");
        let gid = id_number(&name, "-g");
        OsUser { name, uid, gid }
    }
}

impl Drop for Accounts {
    fn drop(&mut self) {
        for (tool, names) in [
            (&self.tools[2], &self.users),
            (&self.tools[3], &self.groups),
        ] {
            for name in names.iter().rev() {
                if let Err(e) = try_tool(tool, &[name.as_str()]) {
                    let _ = writeln!(io::stderr(), "warning: could not remove {name}: {e}");
                }
            }
        }
    }
}

fn try_tool(tool: &Path, args: &[&str]) -> Result<(), String> {
    let _serial = TOOLS.lock().unwrap_or_else(|p| p.into_inner());
    let mut last = String::new();
    // Another process may hold the passwd lock for a moment.
    for _ in 0..50 {
        let out: Output = Command::new(tool)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running {}: {e}", tool.display()))?;
        if out.status.success() {
            return Ok(());
        }
        last = format!(
            "{} {args:?}: {:?}: {}",
            tool.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        if !last.contains("lock") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(last)
}

fn run_tool(tool: &Path, args: &[&str]) {
    if let Err(e) = try_tool(tool, args) {
        panic!("{e}");
    }
}

fn id_number(user: &str, flag: &str) -> u32 {
    let out = Command::new(find_tool("id").expect("`id` is installed"))
        .args([flag, user])
        .output()
        .expect("running id");
    assert!(out.status.success(), "id {flag} {user}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("id {flag} {user}: {e}: {out:?}"))
}

fn group_gid(name: &str) -> u32 {
    let text = std::fs::read_to_string("/etc/group").expect("reading /etc/group");
    text.lines()
        .find_map(|l| {
            let mut f = l.split(':');
            (f.next() == Some(name)).then(|| f.nth(1).and_then(|g| g.parse().ok()))?
        })
        .unwrap_or_else(|| panic!("group {name} is not in /etc/group"))
}

// ---------------------------------------------------------------------------
// Connecting as another uid

/// Connects to `socket` from a child process running as `uid`/`gid` (no
/// supplementary groups) and hands the connected socket back to this
/// process. The daemon reads the peer's credentials at connect time
/// (`SO_PEERCRED`), so the connection is that user's for the whole test
/// while this process reads and writes it. A failed `connect` (for example
/// `PermissionDenied` for a uid outside the socket group) is the error.
pub fn connect_as(socket: &Path, uid: u32, gid: u32) -> io::Result<UnixStream> {
    let (ours, theirs) = UnixStream::pair()?;
    let addr = sockaddr(socket)?;
    let out_fd = theirs.as_raw_fd();
    let mut cmd = Command::new(find_tool("true").unwrap_or_else(|| PathBuf::from("/bin/true")));
    cmd.uid(uid)
        .gid(gid)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure runs in the forked child after setgid/setuid and
    // before exec; it only makes system calls (socket, connect, sendmsg,
    // close) on memory it owns (the copied address, stack buffers), and
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
            if libc::connect(fd, (&raw const addr).cast(), len) != 0 {
                return Err(io::Error::last_os_error());
            }
            send_fd(out_fd, fd)?;
            libc::close(fd);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    child.wait()?;
    drop(theirs);
    recv_fd(&ours)
}

fn sockaddr(path: &Path) -> io::Result<libc::sockaddr_un> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path too long"));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(addr)
}

/// Room for one `SCM_RIGHTS` message with one descriptor (CMSG_SPACE(4) is
/// at most 24 on the platforms this runs on).
#[repr(C, align(8))]
struct CmsgBuf([u8; 64]);

/// Sends `fd` over the Unix socket `over` (async-signal-safe: no allocation).
unsafe fn send_fd(over: libc::c_int, fd: libc::c_int) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut buf = CmsgBuf([0; 64]);
    let space = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf.0.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    let cmsg = libc::CMSG_FIRSTHDR(&msg);
    (*cmsg).cmsg_level = libc::SOL_SOCKET;
    (*cmsg).cmsg_type = libc::SCM_RIGHTS;
    (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
    std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
    if libc::sendmsg(over, &msg, 0) != 1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn recv_fd(from: &UnixStream) -> io::Result<UnixStream> {
    from.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut buf = CmsgBuf([0; 64]);
    // SAFETY: every pointer in `msg` points to live local buffers of the
    // stated sizes; the control data is only read after recvmsg filled it.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = buf.0.as_mut_ptr().cast();
        msg.msg_controllen = buf.0.len() as _;
        let n = libc::recvmsg(from.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n != 1
            || cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("the child sent no descriptor"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        Ok(UnixStream::from(OwnedFd::from_raw_fd(fd)))
    }
}

/// A raw client connected as `user` (panics if the connect fails).
pub fn client_as(socket: &Path, user: &OsUser) -> Client {
    let s = connect_as(socket, user.uid, user.gid)
        .unwrap_or_else(|e| panic!("connecting as {} (uid {}): {e}", user.name, user.uid));
    Client::over(s)
}

// ---------------------------------------------------------------------------
// Two principals (tests/it/sessions_ownership.rs, tests/it/sessions_attach.rs)

/// Alice's OS user, in a group of its own; both removed on drop.
pub struct Account {
    pub user: OsUser,
    pub group: OsGroup,
    _accounts: Accounts,
}

/// A daemon serving a new group, with roster user `alice` (profile `member`:
/// agent `echo` only, sessions and `system:read`) mapped to a new uid in it,
/// beside the shared operator (admin); agents `echo` and `other`. `None`
/// (after printing `SKIPPED`) when accounts cannot be made.
pub fn two_principals() -> Option<(Account, super::start::Env)> {
    let mut accounts = match Accounts::new() {
        Ok(a) => a,
        Err(why) => {
            super::skip(&why);
            return None;
        }
    };
    let group = accounts.group();
    let user = accounts.user(Some(&group));
    let account = Account {
        user,
        group,
        _accounts: accounts,
    };
    let config = format!(
        r#"schema_version = 1

[security]
socket_group = "{group}"

[agents.echo]
backend = "echo"

[agents.other]
backend = "echo"

[permission_profiles.member]
allowed_agents = ["echo"]
grants = {{ sessions = ["create", "read", "update", "delete", "execute"], system = ["read"] }}

[users.alice]
uid = {uid}
permission_profiles = ["member"]
"#,
        group = account.group.name,
        uid = account.user.uid
    );
    let env = super::start::start_in(super::start::traversable_dir(), &config);
    Some((account, env))
}

/// `alice`, initialized.
pub fn alice(account: &Account, env: &super::start::Env) -> Client {
    let mut c = client_as(&env.socket, &account.user);
    let r = c.ok("initialize", json!({"protocolVersion": 1}));
    assert_eq!(r["principalId"], "user:alice", "{r}");
    c
}
