//! Who wrote a message and what it is: [`Role`] and [`Kind`], each word
//! spelled once. The same words are the JSON of context messages (§10.3),
//! the `session/messages` rows (§8.11) and the `role`/`kind` columns of the
//! transcript tables (§9.2), so `as_str`, `parse` and serde all read the one
//! table a `words!` invocation writes.

use std::borrow::Cow;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An enum whose variants are wire words: the enum, `WORDS`, `as_str`,
/// `parse`, and serde through them.
macro_rules! words {
    ($(#[$meta:meta])* $name:ident {
        $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every word, in declaration order.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The wire word.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The variant a wire word names, if any.
            pub fn parse(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let word = Cow::<'de, str>::deserialize(deserializer)?;
                Self::parse(&word).ok_or_else(|| D::Error::unknown_variant(&word, Self::WORDS))
            }
        }
    };
}

words! {
    /// Who produced a message.
    Role {
        /// The user (prompts).
        User = "user",
        /// The agent (replies, tool calls).
        Assistant = "assistant",
        /// A tool (tool results).
        Tool = "tool",
        /// The daemon (interruption markers): transcript rows only, never
        /// model context (the projection drops them).
        System = "system",
    }
}

words! {
    /// What a message is.
    #[derive(Default)]
    Kind {
        /// Plain text (the default).
        #[default]
        Message = "message",
        /// A tool call; `content` is empty.
        ToolCall = "tool_call",
        /// A tool's output.
        ToolResult = "tool_result",
        /// A compaction summary: model context only, never a transcript row.
        Summary = "summary",
        /// Why a turn ended early (`Turn failed: …`, `Turn killed`):
        /// transcript rows only, never model context.
        InterruptionMarker = "interruption_marker",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_through_text_and_json() {
        for &word in Role::WORDS {
            let role = Role::parse(word).unwrap();
            assert_eq!(role.as_str(), word);
            assert_eq!(serde_json::to_string(&role).unwrap(), format!("\"{word}\""));
            assert_eq!(
                serde_json::from_str::<Role>(&format!("\"{word}\"")).unwrap(),
                role
            );
        }
        for &word in Kind::WORDS {
            let kind = Kind::parse(word).unwrap();
            assert_eq!(kind.as_str(), word);
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{word}\""));
            assert_eq!(
                serde_json::from_str::<Kind>(&format!("\"{word}\"")).unwrap(),
                kind
            );
        }
    }

    #[test]
    fn unknown_words_are_refused() {
        assert_eq!(Role::parse("robot"), None);
        assert_eq!(Kind::parse("Message"), None);
        let e = serde_json::from_str::<Kind>("\"robot\"").unwrap_err();
        assert!(e.to_string().contains("unknown variant `robot`"), "{e}");
    }
}
