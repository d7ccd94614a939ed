//! The daemon's questions to the person: an `approval_request` as a
//! one-letter prompt with the time left, and `elicitation/create` as a form
//! (one field at a time, a choice list as a numbered menu). Declining is one
//! key: Enter on an empty answer (or Ctrl-D) rejects or declines; Ctrl-C
//! cancels a form.

use std::fmt;
use std::time::{Duration, Instant};

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::countdown::Countdown;
use super::editor::{Input, Line, Purpose};
use crate::shown::Shown;

/// What to send with `session/approve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub decision: &'static str,
    pub replacement: Option<String>,
}

/// Parses an answer to the approval prompt; `None` asks again.
pub fn parse_decision(answer: &str) -> Option<Decision> {
    let t = answer.trim();
    let (word, rest) = match t.split_once(' ') {
        Some((w, r)) => (w, r.trim()),
        None => (t, ""),
    };
    // A plain decision is the word alone: "a thing" is not "a".
    let plain = |decision| {
        rest.is_empty().then_some(Decision {
            decision,
            replacement: None,
        })
    };
    match word.to_ascii_lowercase().as_str() {
        "a" | "y" | "yes" | "allow" | "allow_once" => plain("allow_once"),
        "w" | "always" | "allow_always" => plain("allow_always"),
        "" | "r" | "n" | "no" | "reject" => plain("reject"),
        "e" | "edit" | "reject_with_edit" if !rest.is_empty() => Some(Decision {
            decision: "reject_with_edit",
            replacement: Some(rest.to_owned()),
        }),
        _ => None,
    }
}

impl Decision {
    /// `reject`: Enter, Ctrl-D, Ctrl-C, and every request of a turn being cancelled.
    pub fn reject() -> Decision {
        Decision {
            decision: "reject",
            replacement: None,
        }
    }
}

/// What the person did at an approval prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Decided(Decision),
    /// Ctrl-C: the call is rejected and the turn cancelled.
    Interrupted,
}

/// Asks about one `approval_request` (its params).
pub async fn approval(input: &mut Input, p: &Value) -> Answer {
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
    let secs = p.get("timeoutSecs").and_then(Value::as_u64).unwrap_or(0);
    let asked = Instant::now();
    // One line, sanitized whole: the agent's name and summary can neither
    // move the cursor nor break the line to forge the question.
    let head = format!(
        "approve {} {}? [a]llow once, al[w]ays, [r]eject (Enter), [e]dit TEXT (",
        s("toolName"),
        s("argumentsSummary")
    );
    let head = Shown::line(&head).as_str().to_owned();
    // The seconds left, redrawn in place at the width they started with.
    let countdown = Countdown {
        deadline: asked + Duration::from_secs(secs),
        at: head.len(),
        width: secs.to_string().len(),
    };
    let mut purpose = Purpose::Question;
    loop {
        let prompt = format!(
            "{head}{:>w$} s left): ",
            countdown.left(),
            w = countdown.width
        );
        let prompt = Shown::line(&prompt);
        let answer = if secs > 0 {
            input.read_counting(&prompt, purpose, countdown).await
        } else {
            input.read(&prompt, purpose).await
        };
        purpose = Purpose::FollowUp;
        match answer {
            Line::Text { text, .. } => match parse_decision(&text) {
                Some(d) => return Answer::Decided(d),
                None => super::render::notice("answer a, w, r or e TEXT"),
            },
            Line::TooLong(_) | Line::NotUtf8 => super::render::notice("answer a, w, r or e TEXT"),
            Line::Eof => return Answer::Decided(Decision::reject()),
            Line::Interrupted => return Answer::Interrupted,
        }
    }
}

/// Answers one `elicitation/create` (its params, and its `line` for the
/// order of the fields): the JSON-RPC result.
pub async fn elicitation(input: &mut Input, p: &Value, line: &str) -> Value {
    let message = p.get("message").and_then(Value::as_str).unwrap_or_default();
    let schema = p.get("requestedSchema").cloned().unwrap_or_default();
    let props = fields_in_order(&schema, line);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    let mut purpose = Purpose::Question;
    // The message may span lines; a field's title and a choice are one line each.
    let mut header = format!(
        "question: {}  (Enter: decline, Ctrl-C: cancel)\n",
        Shown::text(message)
    );
    for (name, field) in &props {
        let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
        let kind = field
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string");
        let choices = choices(field);
        let mut prompt = std::mem::take(&mut header);
        for (i, (_, label)) in choices.iter().enumerate() {
            prompt.push_str(&format!("  {}) {}\n", i + 1, Shown::line(label)));
        }
        prompt.push_str(&format!("{}: ", Shown::line(title)));
        loop {
            let answer = input.read(&Shown::text(&prompt), purpose).await;
            purpose = Purpose::FollowUp;
            let text = match answer {
                Line::Text { text, .. } => text,
                Line::TooLong(_) | Line::NotUtf8 => {
                    super::render::notice("answer too long or not UTF-8");
                    continue;
                }
                Line::Eof => return json!({"action": "decline"}),
                Line::Interrupted => return json!({"action": "cancel"}),
            };
            let text = text.trim();
            if text.is_empty() {
                if required.contains(&name.as_str()) {
                    return json!({"action": "decline"});
                }
                break;
            }
            match pick(&choices, kind, text) {
                Ok(v) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Err(why) => super::render::notice(why),
            }
        }
    }
    json!({"action": "accept", "content": content})
}

/// A field's choices as (value, label): `oneOf` consts with titles, or `enum`.
fn choices(field: &Value) -> Vec<(Value, String)> {
    if let Some(one_of) = field.get("oneOf").and_then(Value::as_array) {
        return one_of
            .iter()
            .filter_map(|o| {
                let v = o.get("const")?.clone();
                let label = o
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                Some((v, label))
            })
            .collect();
    }
    field
        .get("enum")
        .and_then(Value::as_array)
        .map(|e| {
            e.iter()
                .map(|v| {
                    let label = v
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string());
                    (v.clone(), label)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The value an answer names: a menu number or label, or free text of the
/// field's JSON type (`kind`); else what to ask for instead.
fn pick(choices: &[(Value, String)], kind: &str, text: &str) -> Result<Value, &'static str> {
    if choices.is_empty() {
        return typed(kind, text);
    }
    let by_number = text
        .parse::<usize>()
        .ok()
        .and_then(|n| choices.get(n.checked_sub(1)?));
    by_number
        .or_else(|| {
            choices
                .iter()
                .find(|(_, label)| label.eq_ignore_ascii_case(text))
        })
        .map(|(v, _)| v.clone())
        .ok_or("pick one of the numbers shown")
}

/// Free text as a value of the JSON Schema type `kind` (a string for any
/// other type).
fn typed(kind: &str, text: &str) -> Result<Value, &'static str> {
    match kind {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, please"),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or("a number, please"),
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("yes or no, please"),
        },
        _ => Ok(Value::String(text.to_owned())),
    }
}

/// The form's fields in the order the daemon wrote them (a JSON tree sorts
/// an object's members; a form asks in the order it was declared). A field
/// the line does not name in order (it always does) comes after, sorted.
fn fields_in_order(schema: &Value, line: &str) -> Vec<(String, Value)> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let written = serde_json::from_str::<FormLine>(line)
        .map(|l| l.params.requested_schema.properties.0)
        .unwrap_or_default();
    let mut fields: Vec<(String, Value)> = written
        .iter()
        .filter_map(|name| Some((name.clone(), props.get(name)?.clone())))
        .collect();
    for (name, field) in props {
        if !written.contains(name) {
            fields.push((name.clone(), field.clone()));
        }
    }
    fields
}

/// What [`fields_in_order`] reads of an `elicitation/create` line.
#[derive(Deserialize)]
struct FormLine {
    params: FormParams,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FormParams {
    requested_schema: FormSchema,
}

#[derive(Deserialize)]
struct FormSchema {
    properties: MemberNames,
}

/// An object's member names in the order they were written.
struct MemberNames(Vec<String>);

impl<'de> Deserialize<'de> for MemberNames {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> Visitor<'de> for Names {
            type Value = MemberNames;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MemberNames, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    map.next_value::<IgnoredAny>()?;
                    names.push(name);
                }
                Ok(MemberNames(names))
            }
        }
        d.deserialize_map(Names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        let d = |s| parse_decision(s).map(|d| (d.decision, d.replacement));
        assert_eq!(d("a"), Some(("allow_once", None)));
        assert_eq!(d("W"), Some(("allow_always", None)));
        assert_eq!(d(""), Some(("reject", None)));
        assert_eq!(
            d("e use ls"),
            Some(("reject_with_edit", Some("use ls".into())))
        );
        assert_eq!(d("e"), None);
        assert_eq!(d("a question for later"), None);
        assert_eq!(d("yes please"), None);
        assert_eq!(d("maybe"), None);
    }

    #[test]
    fn menu_picks() {
        let field = json!({"oneOf": [{"const": "choice-0", "title": "red"}, {"const": "choice-1", "title": "blue"}]});
        let c = choices(&field);
        assert_eq!(pick(&c, "string", "2"), Ok(json!("choice-1")));
        assert_eq!(pick(&c, "string", "RED"), Ok(json!("choice-0")));
        assert_eq!(
            pick(&c, "string", "3"),
            Err("pick one of the numbers shown")
        );
        assert_eq!(
            pick(&c, "string", "0"),
            Err("pick one of the numbers shown")
        );
        assert_eq!(pick(&[], "string", "free"), Ok(json!("free")));
    }

    #[test]
    fn free_answers_take_the_fields_type() {
        assert_eq!(pick(&[], "integer", "42"), Ok(json!(42)));
        assert_eq!(pick(&[], "integer", "4.5"), Err("a whole number, please"));
        assert_eq!(pick(&[], "number", "4.5"), Ok(json!(4.5)));
        assert_eq!(pick(&[], "number", "NaN"), Err("a number, please"));
        assert_eq!(pick(&[], "boolean", "Yes"), Ok(json!(true)));
        assert_eq!(pick(&[], "boolean", "n"), Ok(json!(false)));
        assert_eq!(pick(&[], "boolean", "maybe"), Err("yes or no, please"));
        assert_eq!(pick(&[], "array", "x"), Ok(json!("x")));
    }

    #[test]
    fn fields_are_asked_in_the_order_they_were_written() {
        let line = r#"{"jsonrpc":"2.0","method":"elicitation/create","id":"zc-out-0","params":{"sessionId":"s","mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"type":"boolean"}}}}}"#;
        let msg: Value = serde_json::from_str(line).unwrap();
        let names = |l: &str| -> Vec<String> {
            fields_in_order(&msg["params"]["requestedSchema"], l)
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        assert_eq!(names(line), ["zeta", "alpha", "mid"]);
        // A line it cannot read for order: the tree's (sorted) order, nothing lost.
        assert_eq!(names("{}"), ["alpha", "mid", "zeta"]);
    }
}
