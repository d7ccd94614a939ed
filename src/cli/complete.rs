//! `zeroclaw completions SHELL`: clap_complete's static script, with the
//! values only the daemon knows completed dynamically. The script calls the
//! hidden `zeroclaw __complete agents|sessions`, which prints one alias or
//! session id a line from the running daemon (`agents/status`,
//! `session/list`); `--agent` falls back to the aliases of `config.toml`
//! when no daemon answers. Nothing here ever completes a file name for an
//! agent or a session (docs/operations.md, "Completions").
//!
//! clap_complete's own dynamic engine (`CompleteEnv`) is behind its
//! `unstable-dynamic` feature and replaces the whole script with calls into
//! the binary for every word; we keep the static script (fast, no process per
//! Tab) and hook only the three value kinds, by wrapping the bash function
//! and by rewriting the few generated zsh and fish lines that name them.

use std::ffi::OsStr;
use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};

use super::conn::ClientPeer;
use super::everyday::entries;

/// What `__complete` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Agents,
    Sessions,
}

/// The shells `zeroclaw completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// How long a Tab may wait for the daemon.
const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// `zeroclaw __complete KIND`: the candidates, one a line; always exit 0
/// (a shell shows nothing rather than an error in the middle of a line).
pub async fn candidates(config_dir: Option<&OsStr>, kind: Kind) -> i32 {
    let found = tokio::time::timeout(ANSWER_WAIT, ask(config_dir, kind))
        .await
        .ok()
        .flatten();
    let words = match (found, kind) {
        (Some(words), _) => words,
        (None, Kind::Agents) => configured_agents(config_dir),
        (None, Kind::Sessions) => Vec::new(),
    };
    let mut out = std::io::stdout().lock();
    for w in words.iter().filter(|w| is_candidate(kind, w)) {
        let _ = writeln!(out, "{w}");
    }
    0
}

/// Whether `w` may be offered: an alias by the config's own alias rule, a session id by the
/// session id rule. Both leave out every character a shell would expand or split on (`*`,
/// `{a,b}`, `~user`, `$`, blanks, quotes), so a hand-edited `config.toml` read on the fallback
/// path cannot put a glob or a command on the user's line.
fn is_candidate(kind: Kind, w: &str) -> bool {
    match kind {
        Kind::Agents => crate::config::is_valid_name(w),
        Kind::Sessions => crate::session::valid_session_id(w),
    }
}

async fn ask(config_dir: Option<&OsStr>, kind: Kind) -> Option<Vec<String>> {
    let mut conn = ClientPeer::open(config_dir).await.ok()?;
    let (method, params, list, key) = match kind {
        Kind::Agents => ("agents/status", json!({}), "agents", "alias"),
        Kind::Sessions => (
            "session/list",
            json!({"limit": 1000}),
            "sessions",
            "session_id",
        ),
    };
    let v = conn.call(method, params).await.ok()?;
    Some(
        entries(&v, list)
            .iter()
            .filter_map(|e| e.get(key).and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
    )
}

/// The agent aliases of `config.toml` (no daemon): read, never written.
fn configured_agents(config_dir: Option<&OsStr>) -> Vec<String> {
    let Ok(dirs) = crate::endpoint::resolve_dirs_from_env(config_dir) else {
        return Vec::new();
    };
    // Read as the daemon reads it: a FIFO there must not hang the user's Tab.
    let Ok(bytes) = crate::config::store::read_config(&dirs.config_file) else {
        return Vec::new();
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Vec::new();
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    table
        .get("agents")
        .and_then(toml::Value::as_table)
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

/// `cmd` without its hidden subcommands, which clap_complete would offer.
fn visible(cmd: &clap::Command) -> clap::Command {
    let subs = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned();
    let mut fresh = clap::Command::new("zeroclaw")
        .version(env!("CARGO_PKG_VERSION"))
        .args(cmd.get_arguments().cloned())
        .subcommands(subs)
        .subcommand_required(cmd.is_subcommand_required_set());
    if let Some(about) = cmd.get_about() {
        fresh = fresh.about(about.clone());
    }
    fresh
}

/// The completion script for `shell`, generated from `cmd`.
pub fn script(shell: Shell, cmd: clap::Command) -> String {
    let mut cmd = visible(&cmd);
    let mut buf = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut cmd, "zeroclaw", &mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    match shell {
        Shell::Bash => bash(&text),
        Shell::Zsh => zsh(&text),
        Shell::Fish => fish(&text),
    }
}

/// The generated `_zeroclaw` becomes `_zeroclaw_static`; the new `_zeroclaw`
/// answers the dynamic values and leaves every other word to it.
fn bash(generated: &str) -> String {
    // `complete -F _zeroclaw` names the function, found when Tab is pressed:
    // the generated registration calls the wrapper defined after it.
    let renamed = generated.replacen("_zeroclaw() {", "_zeroclaw_static() {", 1);
    format!("{renamed}\n{BASH_DYNAMIC}")
}

const BASH_DYNAMIC: &str = r#"# Values only the daemon knows: `zeroclaw __complete agents|sessions`.
_zeroclaw_dynamic() {
    local kind="$1" cur="$2" i dir=()
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case "${COMP_WORDS[i]}" in
            --config-dir) dir=(--config-dir "${COMP_WORDS[i+1]}") ;;
            --config-dir=*) dir=(--config-dir "${COMP_WORDS[i]#--config-dir=}") ;;
        esac
    done
    # No file names when the daemon offers nothing (`-o default` would).
    compopt +o default +o bashdefault 2>/dev/null
    # Each line is taken as it is: `compgen -W` would expand braces, `~`,
    # `$(...)` in it and an unquoted `$(...)` result would be globbed against
    # the current directory. Only the characters of aliases and session ids
    # pass, so what lands on the command line needs no quoting either.
    local c
    COMPREPLY=()
    while IFS= read -r c; do
        [[ $c =~ ^[A-Za-z0-9._:-]+$ && $c == "$cur"* ]] && COMPREPLY+=("$c")
    done < <("${COMP_WORDS[0]}" "${dir[@]}" __complete "$kind" 2>/dev/null)
}

_zeroclaw() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev=""
    if [[ $COMP_CWORD -gt 0 ]]; then prev="${COMP_WORDS[COMP_CWORD-1]}"; fi
    case "$prev" in
        --agent) _zeroclaw_dynamic agents "$cur"; return 0 ;;
        --session|--resume) _zeroclaw_dynamic sessions "$cur"; return 0 ;;
    esac
    case "$cur" in
        --agent=*) _zeroclaw_dynamic agents "${cur#--agent=}"; return 0 ;;
    esac
    # `sessions show|kill|delete ID`: the word after the action.
    local i words=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            -*) ;;
            *) [[ "${COMP_WORDS[i-1]}" == --config-dir ]] || words+=("${COMP_WORDS[i]}") ;;
        esac
    done
    if [[ ${#words[@]} -eq 2 && "${words[0]}" == sessions && "$cur" != -* ]]; then
        case "${words[1]}" in
            show|kill|delete) _zeroclaw_dynamic sessions "$cur"; return 0 ;;
        esac
    fi
    if [[ ${#words[@]} -eq 1 && "${words[0]}" == upload && "$cur" != -* ]]; then
        _zeroclaw_dynamic sessions "$cur"; return 0
    fi
    _zeroclaw_static "$@"
}
"#;

/// Agents (`:ALIAS:`) and session ids (`:ID:`, the `id` and `session`
/// arguments) get their own completers instead of `_default` (file names).
fn zsh(generated: &str) -> String {
    let body = generated
        .replace(":ALIAS:_default'", ":ALIAS:_zeroclaw_dyn_agents'")
        .replace(":ID:_default'", ":ID:_zeroclaw_dyn_sessions'")
        .replace(
            "':id -- The session id:_default'",
            "':id -- The session id:_zeroclaw_dyn_sessions'",
        )
        .replace(
            "':session -- The live session to upload into:_default'",
            "':session -- The live session to upload into:_zeroclaw_dyn_sessions'",
        );
    let Some(rest) = body.strip_prefix("#compdef zeroclaw\n") else {
        return body;
    };
    format!("#compdef zeroclaw\n{ZSH_DYNAMIC}{rest}")
}

const ZSH_DYNAMIC: &str = r#"
# Values only the daemon knows: `zeroclaw __complete agents|sessions`.
(( $+functions[_zeroclaw_dyn_agents] )) ||
_zeroclaw_dyn_agents() {
    local -a items
    items=(${(f)"$(zeroclaw __complete agents 2>/dev/null)"})
    compadd -a items
}
(( $+functions[_zeroclaw_dyn_sessions] )) ||
_zeroclaw_dyn_sessions() {
    local -a items
    items=(${(f)"$(zeroclaw __complete sessions 2>/dev/null)"})
    compadd -a items
}
"#;

/// `--agent`, `--session`, `--resume` lines get `-f -a (…)`; the session
/// argument of `sessions show|kill|delete` and `upload` gets a line of its own.
fn fish(generated: &str) -> String {
    let mut out = String::with_capacity(generated.len() + 512);
    for line in generated.lines() {
        out.push_str(line);
        if line.ends_with(" -r") {
            if line.contains(" -l agent ") {
                out.push_str(" -f -a \"(zeroclaw __complete agents 2>/dev/null)\"");
            } else if line.contains(" -l session ") || line.contains(" -l resume ") {
                out.push_str(" -f -a \"(zeroclaw __complete sessions 2>/dev/null)\"");
            }
        }
        out.push('\n');
    }
    out.push_str(FISH_DYNAMIC);
    out
}

const FISH_DYNAMIC: &str = r#"complete -c zeroclaw -n "__fish_zeroclaw_using_subcommand sessions; and __fish_seen_subcommand_from show kill delete" -f -a "(zeroclaw __complete sessions 2>/dev/null)"
complete -c zeroclaw -n "__fish_zeroclaw_using_subcommand upload" -f -a "(zeroclaw __complete sessions 2>/dev/null)"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_words_are_offered() {
        assert!(is_candidate(Kind::Agents, "echo"));
        assert!(is_candidate(Kind::Sessions, "chat-1f2e"));
        assert!(is_candidate(Kind::Sessions, "a.b:c"));
        for bad in [
            "",
            "a b",
            "a\nb",
            "$(x)",
            "a'b",
            "\u{1b}[31m",
            "a*",
            "{a,b}",
            "~root",
            "a?",
            "[ab]",
        ] {
            assert!(!is_candidate(Kind::Agents, bad), "{bad:?}");
            assert!(!is_candidate(Kind::Sessions, bad), "{bad:?}");
        }
    }
}
