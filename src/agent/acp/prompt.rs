//! The `session/prompt` content blocks of one turn: the prompt text, then a
//! `resource_link` for every attachment marker in it (§8.17:
//! `[IMAGE:<path>]` and `[Document: <name>] <path>`, each on its own line),
//! so the agent gets uploaded files as links into the workspace. The
//! markers stay in the text: an agent that ignores links still sees them.

use serde_json::{json, Value};

/// The prompt's content blocks.
pub fn blocks(prompt: &str) -> Value {
    let mut out = vec![json!({"type": "text", "text": prompt})];
    for line in prompt.lines() {
        if let Some((name, path)) = marker(line) {
            out.push(json!({
                "type": "resource_link",
                "uri": format!("file://{path}"),
                "name": name,
            }));
        }
    }
    Value::Array(out)
}

/// `(name, absolute path)` of one attachment marker line.
fn marker(line: &str) -> Option<(&str, &str)> {
    let (name, path) = if let Some(rest) = line.strip_prefix("[IMAGE:") {
        let path = rest.strip_suffix(']')?;
        (path.rsplit('/').next().unwrap_or(path), path)
    } else {
        let rest = line.strip_prefix("[Document: ")?;
        let (name, path) = rest.split_once("] ")?;
        (name, path)
    };
    path.starts_with('/').then_some((name, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_become_resource_links() {
        let p =
            "look\n[Document: notes.txt] /w/uploads/ab.txt\n[IMAGE:/w/uploads/cd.png]\n[IMAGE:rel]";
        assert_eq!(
            blocks(p),
            json!([
                {"type": "text", "text": p},
                {"type": "resource_link", "uri": "file:///w/uploads/ab.txt", "name": "notes.txt"},
                {"type": "resource_link", "uri": "file:///w/uploads/cd.png", "name": "cd.png"}
            ])
        );
        assert_eq!(blocks("plain"), json!([{"type": "text", "text": "plain"}]));
    }
}
