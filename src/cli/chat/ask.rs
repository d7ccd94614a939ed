//! The daemon's questions to the person: an `approval_request` as a
//! one-letter prompt with the time left, and `elicitation/create` as a form
//! (one field at a time, a choice list as a numbered menu). Declining is one
//! key: Enter on an empty answer (or Ctrl-D) rejects or declines; Ctrl-C
//! cancels a form.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::editor::{Input, Line, Purpose};

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

/// Asks about one `approval_request` (its params).
pub async fn approval(input: &mut Input, p: &Value) -> Decision {
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
    let secs = p.get("timeoutSecs").and_then(Value::as_u64).unwrap_or(0);
    let asked = Instant::now();
    let reject = Decision {
        decision: "reject",
        replacement: None,
    };
    let mut purpose = Purpose::Question;
    loop {
        let left = secs.saturating_sub(asked.elapsed().as_secs());
        let prompt = format!(
            "approve {} {}? [a]llow once, al[w]ays, [r]eject (Enter), [e]dit TEXT ({left} s left): ",
            s("toolName"),
            s("argumentsSummary")
        );
        let answer = input.read(&prompt, purpose).await;
        purpose = Purpose::FollowUp;
        match answer {
            Line::Text { text, .. } => match parse_decision(&text) {
                Some(d) => return d,
                None => super::render::notice("answer a, w, r or e TEXT"),
            },
            Line::TooLong(_) | Line::NotUtf8 => super::render::notice("answer a, w, r or e TEXT"),
            Line::Interrupted | Line::Eof => return reject,
        }
    }
}

/// Answers one `elicitation/create` (its params): the JSON-RPC result.
pub async fn elicitation(input: &mut Input, p: &Value) -> Value {
    let message = p.get("message").and_then(Value::as_str).unwrap_or_default();
    let schema = p.get("requestedSchema").cloned().unwrap_or_default();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    let mut purpose = Purpose::Question;
    let mut header = format!("question: {message}  (Enter: decline, Ctrl-C: cancel)\n");
    for (name, field) in &props {
        let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
        let choices = choices(field);
        let mut prompt = std::mem::take(&mut header);
        for (i, (_, label)) in choices.iter().enumerate() {
            prompt.push_str(&format!("  {}) {label}\n", i + 1));
        }
        prompt.push_str(&format!("{title}: "));
        loop {
            let answer = input.read(&prompt, purpose).await;
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
            match pick(&choices, text) {
                Some(v) => {
                    content.insert(name.clone(), v);
                    break;
                }
                None => super::render::notice("pick one of the numbers shown"),
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

/// The value an answer names: a menu number or label, or free text.
fn pick(choices: &[(Value, String)], text: &str) -> Option<Value> {
    if choices.is_empty() {
        return Some(Value::String(text.to_owned()));
    }
    if let Ok(n) = text.parse::<usize>() {
        return choices.get(n.checked_sub(1)?).map(|(v, _)| v.clone());
    }
    choices
        .iter()
        .find(|(_, label)| label.eq_ignore_ascii_case(text))
        .map(|(v, _)| v.clone())
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
        assert_eq!(pick(&c, "2"), Some(json!("choice-1")));
        assert_eq!(pick(&c, "RED"), Some(json!("choice-0")));
        assert_eq!(pick(&c, "3"), None);
        assert_eq!(pick(&c, "0"), None);
        assert_eq!(pick(&[], "free"), Some(json!("free")));
    }
}
