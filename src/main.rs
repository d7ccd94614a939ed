//! The `zeroclaw` command: the daemon and its client commands (§13).

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde_json::Value;
use zeroclaw::cli::answers::Answers;
use zeroclaw::cli::{file_upload, one_shot};
use zeroclaw::{cli, daemon, logging, systemd};

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
        #[arg(default_value = "{}", value_parser = cli::args::json_object)]
        params: Value,
        /// Answer every approval_request with this decision.
        #[arg(long, value_name = "DECISION", value_enum)]
        approve: Option<cli::args::Decision>,
        /// Answer every elicitation/create with this JSON result.
        #[arg(long, value_name = "JSON", value_parser = cli::args::json_value)]
        elicitation_reply: Option<Value>,
        /// Give up after SECS seconds (exit 1).
        #[arg(long, value_name = "SECS", value_parser = cli::args::seconds)]
        timeout: Option<Duration>,
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
    /// Print the gateway's pairing code (issuing one if none is open) for a browser or remote client.
    Pair,
    /// Show the daemon's status.
    Status {
        /// Print the raw JSON result.
        #[arg(long)]
        json: bool,
    },
    /// Chat with an agent (resumes the most recent chat session unless told otherwise).
    Chat {
        /// A first prompt, sent at once; the chat then goes on interactively.
        prompt: Option<String>,
        /// The session to open: resumed if it exists, else created with this id.
        #[arg(long, value_name = "ID", conflicts_with = "resume")]
        session: Option<String>,
        /// The session to resume; one that does not exist is an error (exit 1).
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        /// The agent to talk to (default: the session's, else `default_agent`, else the first configured).
        #[arg(long, value_name = "ALIAS")]
        agent: Option<String>,
        /// Start a new session even if one could be resumed.
        #[arg(long, conflicts_with_all = ["session", "resume"])]
        new: bool,
        /// The agent's working directory for a new session (default: the current
        /// directory); given on resume, it moves the session there.
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// Open a chat-mode session (its history written when a turn ends, lost on a
        /// crash mid-turn) instead of a durable one (every event kept as it happens).
        #[arg(long)]
        chat_mode: bool,
    },
    /// An ACP agent on stdin/stdout for editors (Zed, JetBrains, Neovim, Emacs), bridging into the daemon's durable sessions.
    Acp {
        /// The agent sessions are opened with (default: `default_agent`, else the first configured).
        #[arg(long, value_name = "ALIAS")]
        agent: Option<String>,
    },
    /// Show the daemon's recent log records; -f follows new ones.
    Logs {
        /// Follow: keep printing records as the daemon logs them.
        #[arg(short, long)]
        follow: bool,
        /// How many recent records to show first.
        #[arg(short = 'n', long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=2048))]
        lines: u32,
        /// Show every record: connection and handshake records are hidden by default.
        #[arg(short = 'v', long)]
        all: bool,
    },
    /// Check the setup as the running user; exit 0 only when all checks pass.
    Doctor {
        /// Check only this agent (its backend, its model, opening a session).
        #[arg(long, value_name = "ALIAS")]
        agent: Option<String>,
    },
    /// Stop the daemon gracefully (SIGTERM, only a daemon of your own uid) and wait until it is gone.
    Stop {
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List sessions (live, persisted, killed), or show, kill or delete one.
    Sessions {
        #[command(subcommand)]
        action: Option<SessionsCmd>,
        /// Print the daemon's result as JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// List the agents you may use: backend, live and persisted sessions.
    Agents {
        /// Print the daemon's result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read or change the configuration (config/get, config/set, or edit the file).
    Config {
        #[command(subcommand)]
        action: ConfigCmd,
        /// Print the daemon's result as JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Run one prompt (for scripts): stream the answer, exit 0 if the turn completed, else 1.
    Run {
        /// The prompt.
        prompt: String,
        /// The agent of the new session (default: `default_agent`, else the first configured).
        #[arg(long, value_name = "ALIAS", conflicts_with = "session")]
        agent: Option<String>,
        /// Prompt this existing session instead of a new one.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Answer every approval with this decision (default: refuse them).
        #[arg(long, value_name = "DECISION", value_enum)]
        approve: Option<cli::args::Decision>,
        /// Print the prompt's result as JSON instead of streaming the text.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: cli::complete::Shell,
    },
    /// Print the man page (roff), or write every page into a directory.
    Man {
        /// Write zeroclaw.1 and a page for every subcommand into DIR.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// The completion scripts' helper: agent aliases or session ids, one a line.
    #[command(name = "__complete", hide = true)]
    Complete {
        #[arg(value_enum)]
        kind: cli::complete::Kind,
    },
}

/// `zeroclaw sessions …`.
#[derive(Subcommand)]
enum SessionsCmd {
    /// The table of sessions (the default).
    List,
    /// Print a session's transcript.
    Show {
        /// The session id.
        id: String,
    },
    /// End a session; a durable one can no longer be resumed.
    Kill {
        /// The session id.
        id: String,
    },
    /// Delete a session and its history.
    Delete {
        /// The session id.
        id: String,
    },
}

/// `zeroclaw config …`.
#[derive(Subcommand)]
enum ConfigCmd {
    /// Print a property's value (a string as it is, anything else as JSON).
    Get {
        /// A dotted property, e.g. `agents.echo.chunk_chars`.
        prop: String,
    },
    /// Set a property; VALUE is parsed as JSON if it parses, else taken as a string.
    Set {
        /// A dotted property, e.g. `agents.echo.chunk_chars`.
        prop: String,
        /// The value: `8`, `true`, `["a"]` are JSON; `hello` is the string "hello".
        value: String,
    },
    /// Edit config.toml in $VISUAL/$EDITOR (else vi) on a private copy; saved atomically
    /// only when valid (every error shown otherwise), through the daemon when one runs.
    Edit,
}

/// `--log-format`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Writes the completion script for `shell` to stdout.
fn completions(shell: cli::complete::Shell) -> i32 {
    use clap::CommandFactory;
    use std::io::Write;
    let script = cli::complete::script(shell, Cli::command());
    i32::from(std::io::stdout().write_all(script.as_bytes()).is_err())
}

/// `zeroclaw man [--dir DIR]`.
fn man_pages(dir: Option<&std::path::Path>) -> i32 {
    use clap::CommandFactory;
    match dir {
        Some(dir) => cli::man::write_all(Cli::command(), dir),
        None => cli::man::print(Cli::command()),
    }
}

/// The async runtime. `zeroclaw acp` gets one thread: the bridge is one
/// loop of cheap steps, and a second thread would cost a cross-thread
/// wake per batch of a turn's stream.
fn runtime(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    match command {
        Command::Acp { .. } => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
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
    let rt = match runtime(&cli.command) {
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
            let answers = Answers {
                approve: approve.map(cli::args::Decision::wire),
                elicitation_reply,
            };
            rt.block_on(one_shot::rpc(config_dir, &method, params, answers, timeout))
        }
        Command::Status { json } => rt.block_on(one_shot::status(config_dir, json)),
        Command::Pair => rt.block_on(one_shot::pair(config_dir)),
        Command::Upload {
            session,
            file,
            filename,
        } => rt.block_on(file_upload::upload(config_dir, &session, &file, filename)),
        Command::Chat {
            prompt,
            session,
            resume,
            agent,
            new,
            cwd,
            chat_mode,
        } => {
            let opts = cli::chat::Options {
                prompt,
                session,
                resume,
                agent,
                new,
                cwd,
                chat_mode,
            };
            rt.block_on(cli::chat::run(cli.config_dir.clone(), opts))
        }
        Command::Acp { agent } => rt.block_on(cli::acp_bridge::run(cli.config_dir.clone(), agent)),
        Command::Logs { follow, lines, all } => {
            let opts = cli::logs::Options {
                limit: lines,
                follow,
                all,
            };
            rt.block_on(cli::logs::run(config_dir, opts))
        }
        Command::Doctor { agent } => rt.block_on(cli::doctor::run(config_dir, agent.as_deref())),
        Command::Stop { json } => rt.block_on(cli::everyday::admin::stop(config_dir, json)),
        Command::Sessions { action, json } => {
            use cli::everyday::sessions::{self, Action};
            let action = match action {
                None | Some(SessionsCmd::List) => Action::List,
                Some(SessionsCmd::Show { id }) => Action::Show(id),
                Some(SessionsCmd::Kill { id }) => Action::Kill(id),
                Some(SessionsCmd::Delete { id }) => Action::Delete(id),
            };
            rt.block_on(sessions::run(config_dir, action, json))
        }
        Command::Agents { json } => rt.block_on(cli::everyday::admin::agents(config_dir, json)),
        Command::Config { action, json } => rt.block_on(async {
            use cli::everyday::admin;
            match action {
                ConfigCmd::Get { prop } => admin::config_get(config_dir, &prop, json).await,
                ConfigCmd::Set { prop, value } => {
                    admin::config_set(config_dir, &prop, &value, json).await
                }
                ConfigCmd::Edit => cli::everyday::config_edit::edit(config_dir, json).await,
            }
        }),
        Command::Run {
            prompt,
            agent,
            session,
            approve,
            json,
        } => {
            let opts = cli::everyday::run::Options {
                prompt,
                agent,
                session,
                approve,
                json,
            };
            rt.block_on(cli::everyday::run::run(config_dir, opts))
        }
        Command::Completions { shell } => completions(shell),
        Command::Man { dir } => man_pages(dir.as_deref()),
        Command::Complete { kind } => rt.block_on(cli::complete::candidates(config_dir, kind)),
    };
    // Don't wait for stray tasks (a connection still flushing) at exit.
    rt.shutdown_timeout(Duration::from_millis(100));
    ExitCode::from(status.clamp(0, 255) as u8)
}
