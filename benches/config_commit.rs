//! The commit path of `config/set-many` (§8.16 steps 5–9), in process,
//! against a temporary config dir, with the functions the daemon uses:
//! `config::stage_many` (stage every entry into one candidate and validate
//! it), `Policy::from_config` (the derived authorization view) and
//! `ConfigStore::commit` (lock `config.toml.lock`, re-read and compare
//! `config.toml`, write `config.toml.tmp`, fsync, rename, fsync the dir).
//!
//! - `set_many/1_entry`: one entry against the default config (one agent);
//! - `set_many/256_entries_small_config`: 256 entries (the largest batch the
//!   method accepts) cycling over 4 props of the default config;
//! - `set_many/256_entries_257_agents`: 256 distinct props, one
//!   `chunk_chars` on each of 256 extra agents (a ~50 KB `config.toml`);
//! - `stage_only/…`: the same batches without the commit (steps 5–7 only),
//!   to separate the CPU part from the fsync-bound write.
//!
//! ```sh
//! cargo bench --bench config_commit -- --warm-up-time 1 --measurement-time 5
//! ```
//!
//! Every iteration writes new values, so every commit really rewrites the
//! file. The config dir is created under the system temp dir unless
//! `ZC_BENCH_CONFIG_DIR` names another place: the figures are those of that
//! file system's fsync.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use zeroclaw::config::{stage_many, Config, ConfigStore, Policy};

/// A fresh config dir, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let base = std::env::var_os("ZC_BENCH_CONFIG_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let p = base.join(format!("zc-bench-config-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("creating the bench config dir");
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn agents(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("a{i:03}")).collect()
}

/// One measured batch shape.
struct Scenario {
    name: &'static str,
    /// Agents created beyond `echo` before measuring.
    extra_agents: usize,
    /// Entries per batch.
    entries: usize,
}

const SCENARIOS: [Scenario; 3] = [
    // One entry against the default config.
    Scenario {
        name: "1_entry",
        extra_agents: 0,
        entries: 1,
    },
    // 256 entries (the most set-many accepts) cycling over 4 props of the
    // default config: the cost of the entry count alone.
    Scenario {
        name: "256_entries_small_config",
        extra_agents: 0,
        entries: 256,
    },
    // 256 distinct props: one `chunk_chars` on each of 256 extra agents.
    Scenario {
        name: "256_entries_257_agents",
        extra_agents: 256,
        entries: 256,
    },
];

/// The entries of iteration `k`; every iteration writes new values.
fn batch(s: &Scenario, names: &[String], k: u64) -> Vec<(String, Value)> {
    const ECHO: [&str; 4] = [
        "agents.echo.chunk_chars",
        "agents.echo.chunk_delay_ms",
        "agents.echo.timeout_secs",
        "daemon.ask_timeout_secs",
    ];
    (0..s.entries)
        .map(|i| {
            let prop = if names.is_empty() {
                ECHO[i % ECHO.len()].to_owned()
            } else {
                format!("agents.{}.chunk_chars", names[i])
            };
            (prop, json!(1 + (k + i as u64) % 1000))
        })
        .collect()
}

/// A store and its running config, with `extra` agents beyond `echo`.
fn setup(dir: &Dir, extra: &[String]) -> (ConfigStore, Config) {
    let (mut store, mut running) = ConfigStore::open(&dir.0).expect("opening the config");
    if !extra.is_empty() {
        let sets: Vec<(String, Value)> = extra
            .iter()
            .map(|a| (format!("agents.{a}.backend"), json!("echo")))
            .collect();
        let (candidate, props) = stage_many(&running, &sets).expect("creating the agents");
        store
            .commit(&candidate, &props)
            .expect("committing the agents");
        running = candidate;
    }
    (store, running)
}

fn set_many(c: &mut Criterion) {
    let mut g = c.benchmark_group("config_commit");
    g.sample_size(20);
    for s in &SCENARIOS {
        let names = agents(s.extra_agents);
        let dir = Dir::new(s.name);
        let (mut store, mut running) = setup(&dir, &names);
        let bytes = {
            let (candidate, _) = stage_many(&running, &batch(s, &names, 0)).unwrap();
            candidate.to_toml_string().unwrap().len()
        };
        eprintln!("{}: config.toml is {bytes} bytes", s.name);

        let mut k = 0u64;
        g.bench_function(format!("stage_only/{}", s.name), |b| {
            b.iter(|| {
                k += 1;
                let sets = batch(s, &names, k);
                let (candidate, props) = stage_many(&running, &sets).unwrap();
                black_box((Policy::from_config(&candidate), props))
            })
        });
        g.bench_function(format!("set_many/{}", s.name), |b| {
            b.iter(|| {
                k += 1;
                let sets = batch(s, &names, k);
                let (candidate, props) = stage_many(&running, &sets).unwrap();
                let policy = Policy::from_config(&candidate);
                store.commit(&candidate, &props).unwrap();
                running = candidate;
                black_box((policy, props))
            })
        });
        // The file holds the last committed batch.
        let text = std::fs::read_to_string(dir.0.join("config.toml")).unwrap();
        assert_eq!(Config::from_toml_str(&text).unwrap(), running);
    }
    g.finish();
}

criterion_group!(benches, set_many);
criterion_main!(benches);
