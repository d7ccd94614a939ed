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

    /// Every word of `T` parses to a variant that spells it back, as text
    /// and as JSON.
    fn round_trips<T>(words: &[&str], parse: fn(&str) -> Option<T>, as_str: fn(T) -> &'static str)
    where
        T: Copy + PartialEq + std::fmt::Debug + Serialize + serde::de::DeserializeOwned,
    {
        for &word in words {
            let value = parse(word).unwrap();
            assert_eq!(as_str(value), word);
            let json = format!("\"{word}\"");
            assert_eq!(serde_json::to_string(&value).unwrap(), json);
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), value);
        }
    }

    #[test]
    fn words_round_trip_through_text_and_json() {
        round_trips(Role::WORDS, Role::parse, Role::as_str);
        round_trips(Kind::WORDS, Kind::parse, Kind::as_str);
    }

    #[test]
    fn unknown_words_are_refused() {
        assert_eq!(Role::parse("robot"), None);
        assert_eq!(Kind::parse("Message"), None);
        let e = serde_json::from_str::<Kind>("\"robot\"").unwrap_err();
        assert!(e.to_string().contains("unknown variant `robot`"), "{e}");
    }
}
