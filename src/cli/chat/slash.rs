//! The chat's own commands, typed as a line starting with `/`.

use std::path::PathBuf;

/// The default of `/history`.
pub const HISTORY_DEFAULT: usize = 20;

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Sessions,
    Resume(String),
    History(usize),
    Upload(PathBuf),
    Cancel,
    /// Answers the approval another client's turn asked (`session/approve`
    /// decision: `allow_once`, `allow_always` or `reject`).
    Approve(&'static str),
    Thoughts,
    Help,
    Quit,
    /// Not a command we know, or missing its argument: the help text says why.
    Bad(String),
}

pub const HELP: &str = "\
/sessions        list your sessions
/resume ID       switch to session ID (shows its last messages)
/history [N]     show the last N messages (default 20)
/upload FILE     upload FILE into the agent's workspace
/cancel          cancel the running turn (Ctrl-C does too)
/approve once|always|reject
                 answer the approval another client's turn asks here
/thoughts        show or hide the agent's thoughts
/help            this list
/quit            leave (Ctrl-D, or Ctrl-C at an empty prompt); the session stays resumable
End a line with \\ to continue the prompt on the next line.";

/// `Some` when `line` is a slash command.
pub fn parse(line: &str) -> Option<Slash> {
    let rest = line.trim().strip_prefix('/')?;
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    Some(match (word, arg) {
        ("sessions", "") => Slash::Sessions,
        ("resume", id) if !id.is_empty() => Slash::Resume(id.to_owned()),
        ("history", "") => Slash::History(HISTORY_DEFAULT),
        ("history", n) => match n.parse::<usize>() {
            Ok(n) if (1..=1000).contains(&n) => Slash::History(n),
            _ => Slash::Bad(format!("/history takes a number from 1 to 1000, not `{n}`")),
        },
        ("upload", file) if !file.is_empty() => Slash::Upload(PathBuf::from(file)),
        ("cancel", "") => Slash::Cancel,
        ("approve", d) => match d {
            "once" | "allow_once" | "y" => Slash::Approve("allow_once"),
            "always" | "allow_always" | "a" => Slash::Approve("allow_always"),
            "reject" | "no" | "n" => Slash::Approve("reject"),
            _ => Slash::Bad("/approve takes once, always or reject".to_owned()),
        },
        ("thoughts", "") => Slash::Thoughts,
        ("help", "") => Slash::Help,
        ("quit" | "exit", "") => Slash::Quit,
        _ => Slash::Bad(format!("unknown command `/{rest}`; /help lists them")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("::approve x"), None);
        assert_eq!(parse("/sessions"), Some(Slash::Sessions));
        assert_eq!(parse(" /resume s-1 "), Some(Slash::Resume("s-1".into())));
        assert_eq!(parse("/history"), Some(Slash::History(20)));
        assert_eq!(parse("/history 5"), Some(Slash::History(5)));
        assert!(matches!(parse("/history x"), Some(Slash::Bad(_))));
        assert_eq!(
            parse("/upload a b.txt"),
            Some(Slash::Upload("a b.txt".into()))
        );
        assert!(matches!(parse("/resume"), Some(Slash::Bad(_))));
        assert!(matches!(parse("/nope"), Some(Slash::Bad(_))));
        assert_eq!(parse("/quit"), Some(Slash::Quit));
        assert_eq!(parse("/approve once"), Some(Slash::Approve("allow_once")));
        assert_eq!(parse("/approve reject"), Some(Slash::Approve("reject")));
        assert!(matches!(parse("/approve"), Some(Slash::Bad(_))));
        assert!(matches!(parse("/approve maybe"), Some(Slash::Bad(_))));
    }
}
