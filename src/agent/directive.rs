//! The echo agent's directive language: one prompt line → one [`Line`].
//!
//! Parsing is pure and total: every line is either a directive with valid
//! arguments or a text line (§10.3). Arguments are checked here, so the
//! executor never meets an out-of-range number or a non-object input.
//!
//! Grammar choices where §10.3 is silent:
//! - "first non-blank characters" means after `str::trim_start` (Unicode
//!   white space);
//! - the name runs to the first space; the rest after that single space is
//!   the argument text, so `::think` and `::think ` both carry `""`;
//! - numbers are plain ASCII digits (no sign, no surrounding blanks);
//! - argument-less directives (`::context`, `::compact`, `::compact-empty`)
//!   tolerate trailing blanks but nothing else;
//! - `::tool NAME` with a blank JSON part means `{}`.

use serde_json::value::RawValue;

use super::json::parse_object;

/// The most that `::repeat` and `::tool big` may produce (16 MiB).
pub const MAX_PRODUCED_BYTES: u64 = 16 * 1024 * 1024;
/// The most options of one `::choose`.
pub const MAX_CHOICES: usize = 32;
/// The longest `::sleep` / `::delay` (one hour).
pub const MAX_WAIT_MS: u64 = 3_600_000;

/// A parsed prompt line.
#[derive(Debug)]
pub enum Line<'p> {
    /// A text item (the whole line, leading blanks included).
    Text(&'p str),
    /// `::think TEXT`.
    Think(&'p str),
    /// `::tool NAME [JSON]`.
    Tool(ToolCall<'p>),
    /// `::approve NAME [JSON]`.
    Approve(ToolCall<'p>),
    /// `::ask TEXT`.
    Ask(&'p str),
    /// `::choose QUESTION | OPTION | OPTION…` (a choice question: zerocode
    /// shows a modal only for choice lists).
    Choose {
        /// QUESTION.
        message: &'p str,
        /// 1 to [`MAX_CHOICES`] non-empty options, trimmed.
        options: Vec<&'p str>,
    },
    /// `::sleep MS`.
    Sleep(u64),
    /// `::delay MS`.
    Delay(u64),
    /// `::chunk N` (N ≥ 1).
    Chunk(u32),
    /// `::repeat N TEXT`, with `TEXT.len() * N` within bounds.
    Repeat {
        /// N.
        times: usize,
        /// TEXT.
        text: &'p str,
    },
    /// `::context`.
    Context,
    /// `::compact`.
    Compact,
    /// `::compact-empty`.
    CompactEmpty,
    /// `::fail MESSAGE`.
    Fail(&'p str),
}

/// A valid `::tool` / `::approve` call.
#[derive(Debug)]
pub struct ToolCall<'p> {
    /// The tool name (no spaces, not empty).
    pub name: &'p str,
    /// The input object, compact.
    pub input: Box<RawValue>,
    /// For `big`: the output size in bytes.
    pub big_bytes: Option<usize>,
}

/// What the runtime must do before an echo turn (§9.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionRequest {
    /// Nothing.
    None,
    /// `::compact`: force compaction.
    Compact,
    /// `::compact-empty`: compact to an empty retained context.
    CompactEmpty,
}

/// Scans the whole prompt: `::compact` / `::compact-empty` act before the
/// turn wherever they appear. `::compact-empty` wins when both appear.
pub fn echo_compaction_request(prompt: &str) -> CompactionRequest {
    let mut request = CompactionRequest::None;
    for line in prompt.lines() {
        match split_directive(line) {
            Some(("compact-empty", rest)) if no_args(rest) => {
                return CompactionRequest::CompactEmpty
            }
            Some(("compact", rest)) if no_args(rest) => request = CompactionRequest::Compact,
            _ => {}
        }
    }
    request
}

/// Parses one line (as produced by `str::lines`).
pub fn parse_line(line: &str) -> Line<'_> {
    split_directive(line)
        .and_then(|(name, rest)| parse_directive(name, rest))
        .unwrap_or(Line::Text(line))
}

/// `(name, rest)` for a line whose first non-blank characters are `::`.
fn split_directive(line: &str) -> Option<(&str, Option<&str>)> {
    let body = line.trim_start().strip_prefix("::")?;
    Some(match body.split_once(' ') {
        Some((name, rest)) => (name, Some(rest)),
        None => (body, None),
    })
}

fn parse_directive<'p>(name: &str, rest: Option<&'p str>) -> Option<Line<'p>> {
    let text = rest.unwrap_or("");
    Some(match name {
        "think" => Line::Think(text),
        "ask" => Line::Ask(text),
        "choose" => parse_choose(text)?,
        "fail" => Line::Fail(text),
        "tool" => Line::Tool(parse_tool(rest?)?),
        "approve" => Line::Approve(parse_tool(rest?)?),
        "sleep" => Line::Sleep(parse_ms(rest?)?),
        "delay" => Line::Delay(parse_ms(rest?)?),
        "chunk" => Line::Chunk(
            u32::try_from(parse_digits(rest?)?)
                .ok()
                .filter(|n| *n >= 1)?,
        ),
        "repeat" => parse_repeat(rest?)?,
        "context" if no_args(rest) => Line::Context,
        "compact" if no_args(rest) => Line::Compact,
        "compact-empty" if no_args(rest) => Line::CompactEmpty,
        _ => return None,
    })
}

/// `QUESTION | A | B`: a question and 1–32 non-empty options.
fn parse_choose(text: &str) -> Option<Line<'_>> {
    let mut parts = text.split('|').map(str::trim);
    let message = parts.next()?;
    let options: Vec<&str> = parts.collect();
    let valid = (1..=MAX_CHOICES).contains(&options.len()) && options.iter().all(|o| !o.is_empty());
    valid.then_some(Line::Choose { message, options })
}

fn no_args(rest: Option<&str>) -> bool {
    rest.is_none_or(|r| r.trim().is_empty())
}

fn parse_digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_ms(text: &str) -> Option<u64> {
    parse_digits(text).filter(|ms| *ms <= MAX_WAIT_MS)
}

fn parse_repeat(rest: &str) -> Option<Line<'_>> {
    let (count, text) = rest.split_once(' ').unwrap_or((rest, ""));
    let times = parse_digits(count)?;
    let total = times.checked_mul(u64::try_from(text.len()).ok()?)?;
    if total > MAX_PRODUCED_BYTES {
        return None;
    }
    // With an empty TEXT any N is within bounds; cap the loop count anyway.
    let times = if text.is_empty() {
        0
    } else {
        usize::try_from(times).ok()?
    };
    Some(Line::Repeat { times, text })
}

fn parse_tool(rest: &str) -> Option<ToolCall<'_>> {
    let (name, json) = rest.split_once(' ').unwrap_or((rest, ""));
    if name.is_empty() {
        return None;
    }
    let input = if json.trim().is_empty() {
        RawValue::from_string("{}".to_owned()).ok()?
    } else {
        parse_object(json)?
    };
    let big_bytes = if name == "big" {
        Some(big_size(&input)?)
    } else {
        None
    };
    Some(ToolCall {
        name,
        input,
        big_bytes,
    })
}

/// `input.bytes` as an integer within bounds. A number with a fraction or an
/// exponent is not an integer here, whatever its value.
fn big_size(input: &RawValue) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Big<'a> {
        #[serde(borrow)]
        bytes: Option<&'a RawValue>,
    }
    let big: Big<'_> = serde_json::from_str(input.get()).ok()?;
    let bytes = parse_digits(big.bytes?.get())?;
    if bytes > MAX_PRODUCED_BYTES {
        return None;
    }
    usize::try_from(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_text(line: &str) -> bool {
        matches!(parse_line(line), Line::Text(t) if t == line)
    }

    #[test]
    fn leading_blanks_and_unknown_names() {
        assert!(matches!(parse_line("  \t::think hi"), Line::Think("hi")));
        assert!(is_text("::thinking hi"));
        assert!(is_text(": ::think hi"));
        assert!(is_text("::"));
        assert!(is_text(":: think"));
        assert!(is_text("::Think x"));
    }

    #[test]
    fn text_arguments_may_be_empty() {
        assert!(matches!(parse_line("::think"), Line::Think("")));
        assert!(matches!(parse_line("::ask "), Line::Ask("")));
        match parse_line("::choose Pick one? | Apple |Banana ") {
            Line::Choose { message, options } => {
                assert_eq!(message, "Pick one?");
                assert_eq!(options, ["Apple", "Banana"]);
            }
            other => panic!("{other:?}"),
        }
        for bad in ["::choose no options", "::choose q | a | ", "::choose"] {
            assert!(matches!(parse_line(bad), Line::Text(_)), "{bad}");
        }
        assert!(matches!(parse_line("::fail  two"), Line::Fail(" two")));
    }

    #[test]
    fn numbers() {
        assert!(matches!(
            parse_line("::sleep 3600000"),
            Line::Sleep(3_600_000)
        ));
        assert!(is_text("::sleep 3600001"));
        assert!(matches!(parse_line("::delay 0"), Line::Delay(0)));
        for bad in [
            "::sleep",
            "::sleep ",
            "::sleep +5",
            "::sleep -1",
            "::sleep 5 ",
            "::sleep 1.5",
            "::delay x",
        ] {
            assert!(is_text(bad), "{bad}");
        }
        assert!(matches!(
            parse_line("::chunk 4294967295"),
            Line::Chunk(u32::MAX)
        ));
        assert!(is_text("::chunk 4294967296"));
        assert!(is_text("::chunk 0"));
        assert!(is_text("::sleep 99999999999999999999999"));
    }

    #[test]
    fn repeat_bounds() {
        assert!(matches!(
            parse_line("::repeat 3 ab"),
            Line::Repeat {
                times: 3,
                text: "ab"
            }
        ));
        assert!(matches!(
            parse_line("::repeat 2  a"),
            Line::Repeat {
                times: 2,
                text: " a"
            }
        ));
        assert!(matches!(
            parse_line("::repeat 16777216 x"),
            Line::Repeat {
                times: 16_777_216,
                ..
            }
        ));
        assert!(is_text("::repeat 16777217 x"));
        assert!(is_text("::repeat 8388609 xy"));
        assert!(matches!(
            parse_line("::repeat 5"),
            Line::Repeat { times: 0, text: "" }
        ));
        assert!(matches!(
            parse_line("::repeat 99999 "),
            Line::Repeat { times: 0, .. }
        ));
        assert!(is_text("::repeat 99999999999999999999 x"));
        assert!(matches!(
            parse_line("::repeat 0 x"),
            Line::Repeat {
                times: 0,
                text: "x"
            }
        ));
        assert!(is_text("::repeat x 1"));
        assert!(is_text("::repeat"));
    }

    #[test]
    fn tool_arguments() {
        let Line::Tool(call) = parse_line("::tool echo {\"b\": 1, \"a\": 2.0}") else {
            panic!()
        };
        assert_eq!(
            (call.name, call.input.get()),
            ("echo", r#"{"b":1,"a":2.0}"#)
        );
        let Line::Approve(call) = parse_line("::approve rm") else {
            panic!()
        };
        assert_eq!((call.name, call.input.get()), ("rm", "{}"));
        let Line::Tool(call) = parse_line("::tool x ") else {
            panic!()
        };
        assert_eq!(call.input.get(), "{}");
        for bad in [
            "::tool",
            "::tool ",
            "::tool  {}",
            "::tool x [1]",
            "::tool x {",
            "::tool x {} {}",
            "::approve x 1",
        ] {
            assert!(is_text(bad), "{bad}");
        }
    }

    #[test]
    fn big_needs_an_integer_within_bounds() {
        let Line::Tool(call) = parse_line(r#"::tool big {"bytes":16777216}"#) else {
            panic!()
        };
        assert_eq!(call.big_bytes, Some(16_777_216));
        let Line::Tool(call) = parse_line(r#"::tool big {"bytes":0}"#) else {
            panic!()
        };
        assert_eq!(call.big_bytes, Some(0));
        for bad in [
            "::tool big",
            r#"::tool big {"bytes":16777217}"#,
            r#"::tool big {"bytes":1.0}"#,
            r#"::tool big {"bytes":1e3}"#,
            r#"::tool big {"bytes":-1}"#,
            r#"::tool big {"bytes":"10"}"#,
            r#"::approve big {"size":10}"#,
        ] {
            assert!(is_text(bad), "{bad}");
        }
        let Line::Tool(call) = parse_line(r#"::tool bigger {"bytes":"x"}"#) else {
            panic!()
        };
        assert_eq!(call.big_bytes, None);
    }

    #[test]
    fn argument_less_directives() {
        assert!(matches!(parse_line("::context"), Line::Context));
        assert!(matches!(parse_line(" ::context  "), Line::Context));
        assert!(is_text("::context now"));
        assert!(matches!(parse_line("::compact"), Line::Compact));
        assert!(matches!(parse_line("::compact-empty"), Line::CompactEmpty));
        assert!(is_text("::compact please"));
    }

    #[test]
    fn compaction_request_anywhere() {
        assert_eq!(
            echo_compaction_request("hi\nthere"),
            CompactionRequest::None
        );
        assert_eq!(
            echo_compaction_request("hi\n  ::compact"),
            CompactionRequest::Compact
        );
        assert_eq!(
            echo_compaction_request("::compact-empty\nx"),
            CompactionRequest::CompactEmpty
        );
        assert_eq!(
            echo_compaction_request("::compact\n::compact-empty\n::compact"),
            CompactionRequest::CompactEmpty
        );
        assert_eq!(
            echo_compaction_request("::compact x"),
            CompactionRequest::None
        );
    }
}
