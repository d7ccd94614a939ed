//! The closed sets of words `[agents.<alias>]` chooses from (`backend`,
//! `input`, `load_session`, `permission_default`, `fs`, `approval`,
//! `tools`): each an enum whose spelling is written once, here, for
//! validation to check, the spec to parse and `config/list` to offer.

/// A closed set of config words: `NAMES[i]` is the spelling of `ALL[i]`.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every choice, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Their spellings in `config.toml`, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($word),+];

            /// The choice spelled `word`, if any.
            pub fn parse(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// Its spelling in `config.toml`.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }
    };
}

choice! {
    /// Which backend runs an agent's turns (`backend`).
    Backend {
        /// The built-in deterministic agent.
        Echo = "echo",
        /// A configured local program.
        Command = "command",
        /// A hosted Agent Client Protocol agent.
        Acp = "acp",
        /// An OpenAI-compatible model server.
        OpenAi = "openai",
    }
}

choice! {
    /// How the command agent feeds its program (`input`).
    InputMode {
        /// The prompt text.
        Prompt = "prompt",
        /// `{"system_prompt":…,"messages":[…]}`.
        ContextJson = "context_json",
    }
}

choice! {
    /// Whether rehydrating an ACP agent's session calls `session/load` (`load_session`).
    LoadSession {
        /// When the agent offers it.
        Auto = "auto",
        /// Never: always a new ACP session.
        Never = "never",
    }
}

choice! {
    /// What an unanswered or unreachable ACP permission request becomes
    /// (`permission_default`).
    PermissionDefault {
        Reject = "reject",
        AllowOnce = "allow_once",
    }
}

choice! {
    /// Whether an ACP agent is served `fs/*` (`fs`).
    FsAccess {
        /// Inside the session's working directory.
        Workspace = "workspace",
        /// Not at all.
        Off = "off",
    }
}

choice! {
    /// Which model tool calls wait for the user's approval (`approval`, §8.12).
    Approval {
        /// Every call.
        Always = "always",
        /// Calls that change something: `write_file`, `shell`.
        Writes = "writes",
        /// None.
        Never = "never",
    }
}

choice! {
    /// One built-in tool a model may call (`tools`); `crate::agent`
    /// implements each.
    Tool {
        ReadFile = "read_file",
        WriteFile = "write_file",
        ListDir = "list_dir",
        SearchText = "search_text",
        Shell = "shell",
    }
}

// `choice!` derives the same traits for every set; only this one has a default.
#[allow(clippy::derivable_impls)]
impl Default for Approval {
    fn default() -> Self {
        Approval::Writes
    }
}

impl Approval {
    /// Whether a call of `tool` needs approval.
    pub fn needs(self, tool: Tool) -> bool {
        match self {
            Self::Always => true,
            Self::Writes => tool.writes(),
            Self::Never => false,
        }
    }
}

impl Backend {
    /// Whether it was added after version 1 (`acp`, `openai`): such an
    /// agent's `env` holds credentials, so reads mask it and other children
    /// never inherit its names.
    pub fn is_addition(self) -> bool {
        matches!(self, Backend::Acp | Backend::OpenAi)
    }
}

impl Tool {
    /// Whether it changes anything (`approval = "writes"`).
    pub fn writes(self) -> bool {
        matches!(self, Tool::WriteFile | Tool::Shell)
    }
}

/// `NAMES` as a refusal lists them: `"a", "b" or "c"`.
pub fn expected(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_back_to_its_choice() {
        for (c, n) in Backend::ALL.iter().zip(Backend::NAMES) {
            assert_eq!(Backend::parse(n), Some(*c));
            assert_eq!(c.name(), *n);
        }
        assert_eq!(Tool::parse("rm"), None);
        assert_eq!(Backend::parse("Echo"), None);
    }

    #[test]
    fn expected_lists_as_the_messages_say() {
        assert_eq!(
            expected(Backend::NAMES),
            r#""echo", "command", "acp" or "openai""#
        );
        assert_eq!(expected(InputMode::NAMES), r#""prompt" or "context_json""#);
    }
}
