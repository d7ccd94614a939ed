//! The bounded blocking pools of work on paths an agent, a model or a
//! repository controls. Such work may block (a slow network mount; before
//! the non-blocking opens, a FIFO blocked forever), and the runtime's
//! blocking threads are shared with the daemon's own work (config saves,
//! SQLite, uploads): so each kind of work gets a few permits, acquired with
//! a deadline (else [`Error::Busy`]), and the caller waits for the work
//! with a deadline (else [`Error::TimedOut`]; the work keeps its permit
//! until it really ends, so stuck work is bounded by the permits).

use std::time::Duration;

use tokio::sync::Semaphore;

use super::Error;

/// A kind of confined blocking work, with its own permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// ACP `fs/*`, `terminal/create`'s `cwd`, the openai file tools.
    AgentFiles,
    /// `session/git_branch` (polled every second by zerocode).
    GitHead,
}

/// Permits of [`Work::AgentFiles`]: with the 8 MiB read bound of ACP, at
/// most 64 MiB of read buffers at once.
pub const AGENT_FILES_PERMITS: usize = 8;
/// Permits of [`Work::GitHead`]: its reads are 1 MiB at most each.
pub const GIT_HEAD_PERMITS: usize = 4;

static AGENT_FILES: Semaphore = Semaphore::const_new(AGENT_FILES_PERMITS);
static GIT_HEAD: Semaphore = Semaphore::const_new(GIT_HEAD_PERMITS);

impl Work {
    fn permits(self) -> &'static Semaphore {
        match self {
            Work::AgentFiles => &AGENT_FILES,
            Work::GitHead => &GIT_HEAD,
        }
    }

    /// How long a job waits for a permit.
    pub fn admission(self) -> Duration {
        match self {
            Work::AgentFiles => Duration::from_secs(10),
            Work::GitHead => Duration::from_secs(2),
        }
    }

    /// How long the caller waits for the work itself.
    pub fn deadline(self) -> Duration {
        match self {
            Work::AgentFiles => Duration::from_secs(30),
            Work::GitHead => Duration::from_secs(5),
        }
    }
}

/// Runs `job` on a blocking thread under `work`'s permits and deadlines.
pub async fn run<T, F>(work: Work, job: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, Error> + Send + 'static,
{
    run_in(work.permits(), work.admission(), work.deadline(), job).await
}

async fn run_in<T, F>(
    permits: &'static Semaphore,
    admission: Duration,
    deadline: Duration,
    job: F,
) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, Error> + Send + 'static,
{
    let permit = match tokio::time::timeout(admission, permits.acquire()).await {
        Ok(Ok(permit)) => permit,
        _ => return Err(Error::Busy),
    };
    let handle = tokio::task::spawn_blocking(move || {
        let _held = permit;
        job()
    });
    match tokio::time::timeout(deadline, handle).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(Error::Io(std::io::Error::other(e.to_string()))),
        Err(_) => Err(Error::TimedOut {
            secs: deadline.as_secs(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stuck_work_holds_only_its_permits_and_later_work_is_refused_in_time() {
        static PERMITS: Semaphore = Semaphore::const_new(2);
        let short = Duration::from_millis(100);
        // Two jobs stuck until released: both callers stop waiting at the deadline.
        let release = Arc::new(Barrier::new(3));
        let mut stuck = Vec::new();
        for _ in 0..2 {
            let release = release.clone();
            let job = move || {
                release.wait();
                Ok(())
            };
            stuck.push(tokio::spawn(run_in(&PERMITS, short, short, job)));
        }
        for s in stuck {
            assert!(matches!(s.await.unwrap(), Err(Error::TimedOut { .. })));
        }
        // Their permits are still held: a third job is refused, not queued forever.
        let third = run_in(&PERMITS, short, short, || Ok(3)).await;
        assert!(matches!(third, Err(Error::Busy)));
        // Another kind is not affected.
        assert_eq!(run(Work::AgentFiles, || Ok(2)).await.unwrap(), 2);
        // Released, the permits come back.
        tokio::task::spawn_blocking(move || release.wait())
            .await
            .unwrap();
        let mut fourth = Err(Error::Busy);
        for _ in 0..50 {
            fourth = run_in(&PERMITS, short, short, || Ok(4)).await;
            if fourth.is_ok() {
                break;
            }
        }
        assert_eq!(fourth.unwrap(), 4);
    }
}
