//! The `zeroclaw` command: the daemon and its client commands (SPEC §13).

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde_json::Value;
use zeroclaw::client::{self, exit, Answers};
use zeroclaw::{daemon, logging, systemd};

#[derive(Parser)]
#[command(
    name = "zeroclaw",
    version,
    about = "ZeroClaw daemon and client: JSON-RPC 2.0 over a local socket"
)]
struct Cli {
    /// Configuration directory (data dir is DIR/data); overrides ZEROCLAW_CONFIG_DIR.
    #[arg(long, global = true, value_name = "DIR")]
    config_dir: Option<OsString>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon.
    Daemon {
        /// Exit 1 s after the last client disconnects.
        #[arg(long)]
        ephemeral: bool,
        /// Enable debug/set-faults (black-box tests of storage failures).
        #[arg(long)]
        test_faults: bool,
        /// Log format on stderr (default: text on a terminal, json otherwise).
        #[arg(long, value_name = "FORMAT", value_enum)]
        log_format: Option<LogFormat>,
    },
    /// Send one request; the result goes to stdout, notifications and daemon requests to stderr.
    Rpc {
        /// Method name, e.g. `status`.
        method: String,
        /// Params as a JSON object.
        #[arg(default_value = "{}")]
        params: String,
        /// Answer every approval_request with this decision.
        #[arg(long, value_name = "DECISION")]
        approve: Option<String>,
        /// Answer every elicitation/create with this JSON result.
        #[arg(long, value_name = "JSON")]
        elicitation_reply: Option<String>,
        /// Give up after SECS seconds (exit 1).
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
    },
    /// Upload FILE into SESSION's agent workspace (chunked, verified by SHA-256).
    Upload {
        /// The live session to upload into.
        session: String,
        /// The file to upload (at most 10 MiB).
        file: std::path::PathBuf,
        /// Display name (default: the file's name).
        #[arg(long)]
        filename: Option<String>,
    },
    /// Show the daemon's status.
    Status {
        /// Print the raw JSON result.
        #[arg(long)]
        json: bool,
    },
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("zeroclaw: {msg}");
    ExitCode::from(exit::USAGE as u8)
}

/// `--log-format`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config_dir = cli.config_dir.as_deref();
    // Before any thread exists: this removes the activation variables.
    let activation = match &cli.command {
        Command::Daemon { .. } => match systemd::take_from_env() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("zeroclaw daemon: {e}");
                return ExitCode::FAILURE;
            }
        },
        _ => systemd::Activation::default(),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zeroclaw: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let status = match cli.command {
        Command::Daemon {
            ephemeral,
            test_faults,
            log_format,
        } => {
            logging::init(match log_format {
                Some(LogFormat::Text) => logging::Format::Text,
                Some(LogFormat::Json) => logging::Format::Json,
                None => logging::Format::for_stderr(),
            });
            let opts = daemon::Options {
                config_dir: cli.config_dir.clone(),
                ephemeral,
                test_faults,
                listen_fd: activation.listen_fd,
            };
            let status = rt.block_on(daemon::run(opts));
            logging::flush();
            status
        }
        Command::Rpc {
            method,
            params,
            approve,
            elicitation_reply,
            timeout,
        } => {
            let params: Value = match serde_json::from_str(&params) {
                Ok(v @ Value::Object(_)) => v,
                _ => return usage("PARAMS_JSON must be a JSON object"),
            };
            let elicitation_reply =
                match elicitation_reply.map(|s| serde_json::from_str::<Value>(&s)) {
                    None => None,
                    Some(Ok(v)) => Some(v),
                    Some(Err(_)) => return usage("--elicitation-reply must be JSON"),
                };
            let timeout = match timeout {
                None => None,
                Some(t) if t.is_finite() && t >= 0.0 => Some(Duration::from_secs_f64(t)),
                Some(_) => return usage("--timeout must be a non-negative number of seconds"),
            };
            let answers = Answers {
                approve,
                elicitation_reply,
            };
            rt.block_on(client::rpc(config_dir, &method, params, answers, timeout))
        }
        Command::Status { json } => rt.block_on(client::status(config_dir, json)),
        Command::Upload {
            session,
            file,
            filename,
        } => rt.block_on(client::upload(config_dir, &session, &file, filename)),
    };
    // Don't wait for stray tasks (a connection still flushing) at exit.
    rt.shutdown_timeout(Duration::from_millis(100));
    ExitCode::from(status.clamp(0, 255) as u8)
}
