//! The daemon-wide memory budget (docs/reliability.md "Memory
//! budget"): one counter of the bytes the daemon holds for its clients, so
//! that over it new work is refused with `-32004` `{"limit":"memory"}`
//! instead of the allocator failing and the process dying.
//!
//! Accounted: the frames of requests in flight (charged by the limit layer
//! for the request's life), outbound frames queued for writing (from
//! `Outbound::send` until the writer takes them), the text a running turn
//! has produced (until the turn ends), and every live session's retained
//! context, and staged uploads (their metadata from begin, each chunk as it
//! is accepted, until commit, expiry or their connection's close; inside
//! §4's own 256 MiB cap). A charge that backs work already admitted (an
//! answer, a notification, a turn's next chunk) is never refused: the
//! counter may go over the budget, and only new work is turned away.
//!
//! One budget per process, like the allocator it protects, so every layer
//! reaches it without plumbing: [`budget`]. It stands among the backends
//! (it names no wire error: [`OverBudget`] becomes
//! `-32004` `memory` in `error/`), so that even agent code, which reads
//! files for an agent, charges what it holds.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::limits::{BUDGET_MIB_RANGE, BUDGET_MIB_RULE, DEFAULT_BUDGET_MIB};

const DEFAULT_BUDGET_BYTES: usize = DEFAULT_BUDGET_MIB as usize * MIB;
const MIB: usize = 1024 * 1024;
/// The environment variable that sets the budget, in MiB (at startup); it
/// overrides `daemon.memory_budget_mib` for the process's life.
pub const BUDGET_ENV: &str = "ZEROCLAW_MEMORY_BUDGET_MIB";

/// Set once [`BUDGET_ENV`] has set the budget: the config no longer does.
static PINNED_BY_ENV: AtomicBool = AtomicBool::new(false);

/// New work refused: the budget (`max` bytes) is spent. The wire's
/// `-32004` `{"limit":"memory"}` (`From<OverBudget> for RpcError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    pub max: u64,
}

/// The bytes held for clients, and the most new work may bring it to.
#[derive(Debug)]
pub struct Budget {
    limit: AtomicUsize,
    used: AtomicUsize,
}

static BUDGET: Budget = Budget {
    limit: AtomicUsize::new(DEFAULT_BUDGET_BYTES),
    used: AtomicUsize::new(0),
};

/// The process's budget.
pub fn budget() -> &'static Budget {
    &BUDGET
}

/// Reads [`BUDGET_ENV`] (MiB in [`BUDGET_MIB_RANGE`]) at startup; set, it
/// pins the budget against the config. `Err` names a bad value.
pub fn configure_from_env() -> Result<(), String> {
    let Some(raw) = std::env::var_os(BUDGET_ENV) else {
        return Ok(());
    };
    let mib = raw
        .to_str()
        .and_then(|s| s.parse::<u32>().ok())
        .filter(|m| BUDGET_MIB_RANGE.contains(m))
        .ok_or_else(|| format!("{BUDGET_ENV} {BUDGET_MIB_RULE}, got {raw:?}"))?;
    set_limit_mib(mib);
    PINNED_BY_ENV.store(true, Ordering::Relaxed);
    Ok(())
}

/// Applies `daemon.memory_budget_mib` (at startup and after every config
/// commit: live), unless [`BUDGET_ENV`] pinned the budget. Lowered below
/// what is held, new work is refused until it drains; nothing admitted is cut.
pub fn apply_config(mib: u32) {
    if !PINNED_BY_ENV.load(Ordering::Relaxed) {
        set_limit_mib(mib);
    }
}

fn set_limit_mib(mib: u32) {
    BUDGET
        .limit
        .store((mib as usize).saturating_mul(MIB), Ordering::Relaxed);
}

impl Budget {
    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// [`OverBudget`] when the budget is spent: new work is refused.
    pub fn check(&self) -> Result<(), OverBudget> {
        if self.used() >= self.limit() {
            Err(self.exceeded())
        } else {
            Ok(())
        }
    }

    /// Admits `n` more bytes of new work, or refuses it.
    pub fn try_charge(&'static self, n: usize) -> Result<Charge, OverBudget> {
        self.admit(n)?;
        Ok(Charge { budget: self, n })
    }

    /// Counts `n` bytes of new work if they fit, else counts nothing.
    fn admit(&self, n: usize) -> Result<(), OverBudget> {
        let before = self.used.fetch_add(n, Ordering::AcqRel);
        if before.saturating_add(n) > self.limit() {
            self.used.fetch_sub(n, Ordering::AcqRel);
            return Err(self.exceeded());
        }
        Ok(())
    }

    /// Counts `n` bytes that back work already admitted (never refused).
    pub fn add(&self, n: usize) {
        self.used.fetch_add(n, Ordering::AcqRel);
    }

    /// Gives back `n` bytes counted with [`Budget::add`].
    pub fn sub(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    fn exceeded(&self) -> OverBudget {
        OverBudget {
            max: self.limit() as u64,
        }
    }
}

/// Bytes charged to the budget until dropped.
#[derive(Debug)]
pub struct Charge {
    budget: &'static Budget,
    n: usize,
}

impl Charge {
    /// Nothing charged yet (grown with [`Charge::set`]).
    pub fn empty() -> Self {
        Self {
            budget: budget(),
            n: 0,
        }
    }

    /// Charges `n` bytes in all from now on (backing admitted work: never refused).
    pub fn set(&mut self, n: usize) {
        if n > self.n {
            self.budget.add(n - self.n);
        } else {
            self.budget.sub(self.n - n);
        }
        self.n = n;
    }
}

impl Charge {
    /// Charges `n` more bytes of new work, or refuses them and leaves the
    /// charge as it was.
    pub fn try_grow(&mut self, n: usize) -> Result<(), OverBudget> {
        self.budget.admit(n)?;
        self.n += n;
        Ok(())
    }

    /// Bytes charged now.
    pub fn bytes(&self) -> usize {
        self.n
    }

    /// Stops counting down on drop: the caller gives the bytes back itself
    /// with [`Budget::sub`] (a request's in-flight hold gives them back with
    /// its place).
    pub fn hand_over(self) -> usize {
        let n = self.n;
        std::mem::forget(self);
        n
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.sub(self.n);
    }
}

/// Allocations from this size up get a mapping of their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: i32 = 128 * 1024;

/// Makes every large buffer (a turn's text, a chunk, a frame, SQLite's
/// copies) a mapping of its own, returned to the kernel when freed. glibc
/// otherwise raises its mmap threshold to 32 MiB after the first large free,
/// and then each of its arenas (about one per thread) keeps the freed
/// buffers resident: one 16 MB ACP turn peaked at ~220 MiB for ~70 MiB in
/// use (docs/reliability.md). Called once at startup.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; a fixed threshold also
    // turns off glibc's dynamic adjustment of it.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
    }
}

/// Hands memory freed by a large turn back to the kernel: glibc keeps freed
/// heap in its arenas, so a 16 MiB turn would otherwise stay resident
/// (~240 MB after one `::repeat` turn).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}
