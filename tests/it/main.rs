//! The protocol tests: one integration-test crate against the real binary.
//!
//! Every module here was once a test binary of its own, and each of them
//! compiled the harness (`common`, `gateway_support`) again and linked the
//! whole crate with its dependencies again. As modules of one crate the
//! harness is built once and the tests are linked once; libtest runs them all
//! in one process, as many at a time as before (one per core). Run one area
//! with a name filter: `cargo test --test it -- golden::` (filters match any
//! part of a test's path, so `golden::` also runs `gateway_golden::`).
//!
//! What a test may not do here, since every test shares the process: change
//! the environment variables, umask, signal dispositions, current directory
//! or resource limits of the test process itself (a child's are set on its
//! `Command` or in `pre_exec`). A test that needs that would be a `[[test]]`
//! binary of its own in Cargo.toml; none does today. Process-wide state the
//! harness keeps (built agents, the named pipes' runtime, the lock around
//! `useradd`) is shared by every module, which is what it is for.
//!
//! The modules about Unix-only means are compiled out on Windows
//! (`#[cfg(unix)]` below); each says why in its header (`// Unix only: ...`,
//! which `scripts/windows.sh skipped` lists). The rest is the Windows suite.

// The harness, compiled once. `#[macro_use]` and first: its macros
// (`skip_test!`, `ok_or_skip!`) are in scope in every module below.
#[macro_use]
mod common;
mod gateway_support;

// The suites, one module each.
#[cfg(unix)]
mod acp_backend;
#[cfg(unix)]
mod acp_backend_faults;
#[cfg(unix)]
mod acp_backpressure;
#[cfg(unix)]
mod acp_bridge;
mod acp_compaction;
#[cfg(unix)]
mod acp_crash;
mod acp_faults;
mod acp_sdk_agent;
#[cfg(unix)]
mod acp_surface;
#[cfg(unix)]
mod acp_terminal;
#[cfg(unix)]
mod additions;
mod agent_boundary_deadline;
#[cfg(unix)]
mod agent_boundary_env;
#[cfg(unix)]
mod agent_boundary_fs;
#[cfg(unix)]
mod agent_boundary_lifetime;
mod agent_boundary_redirects;
mod agent_boundary_secrets;
#[cfg(unix)]
mod agent_boundary_signals;
mod agent_boundary_slots;
mod audit_sessions;
#[cfg(unix)]
mod authz_live;
#[cfg(unix)]
mod authz_pairing;
#[cfg(unix)]
mod authz_users;
#[cfg(unix)]
mod cancel_stalled;
mod chat_commands;
#[cfg(unix)]
mod chat_frictions;
#[cfg(unix)]
mod chat_pipe;
mod chat_project;
#[cfg(unix)]
mod chat_sanitize;
#[cfg(unix)]
mod chat_tty;
#[cfg(unix)]
mod chat_tty_faults;
#[cfg(unix)]
mod chat_typeahead;
mod cli;
#[cfg(unix)]
mod cli_everyday;
mod cli_values;
mod command_agent;
#[cfg(unix)]
mod completions;
mod config_concurrency;
#[cfg(unix)]
mod config_crash;
#[cfg(unix)]
mod config_edit;
#[cfg(unix)]
mod config_file;
mod config_set_many;
mod config_storage;
#[cfg(unix)]
mod config_symlink;
#[cfg(unix)]
mod config_untrusted;
#[cfg(unix)]
mod dashboard_browser;
#[cfg(unix)]
mod doctor;
#[cfg(unix)]
mod echo_bounds;
mod endpoint;
#[cfg(unix)]
mod env_corrupt_start;
#[cfg(unix)]
mod env_full_disk;
#[cfg(unix)]
mod env_read_only;
mod ephemeral;
#[cfg(unix)]
mod fault_uploads;
mod files_attach;
#[cfg(unix)]
mod files_attacks;
mod files_prompt;
#[cfg(unix)]
mod files_unbounded;
mod files_upload;
mod frame_bounds;
mod framing;
mod gateway_dashboard;
#[cfg(unix)]
mod gateway_exposure;
mod gateway_golden;
mod gateway_limits;
mod gateway_pairing;
mod gateway_pipelining;
mod gateway_tls;
#[cfg(unix)]
mod gateway_ws;
mod golden;
mod limits;
#[cfg(unix)]
mod load_connections;
#[cfg(unix)]
mod logging_faults;
mod logging_filter;
#[cfg(unix)]
mod logs_cmd;
#[cfg(unix)]
mod memory_budget;
mod memory_budget_config;
mod openai_approvals;
mod openai_backend;
mod openai_failures;
mod openai_real;
#[cfg(unix)]
mod openai_tools;
#[cfg(windows)]
mod pipe;
mod pipelining;
mod prop_codec;
mod prop_config;
mod prop_envelope;
#[cfg(unix)]
mod session_closing;
#[cfg(unix)]
mod sessions_attach;
mod sessions_checks;
#[cfg(unix)]
mod sessions_command;
mod sessions_interaction;
mod sessions_lifecycle;
mod sessions_ownership;
mod sessions_streaming;
#[cfg(unix)]
mod shared_dirs;
mod shutdown_checkpoint;
#[cfg(unix)]
mod shutdown_delivery;
#[cfg(unix)]
mod systemd;
#[cfg(unix)]
mod turn_copies;
mod upload_budget;
#[cfg(unix)]
mod zerocode;
