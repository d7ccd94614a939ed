//! Format-preserving writes of `config.toml`: a commit edits the user's own document
//! with `toml_edit` instead of serializing the typed config, so the comments, the order, the
//! blank lines and the quoting of every key it does not change stay as the user wrote them.
//!
//! What changes: every leaf whose value differs between the config the file holds and the
//! candidate, and every prop the request named (set to the value it already had, or to its
//! default, it is still written: the user asked for that key). Defaults nobody set are never
//! written. A key the candidate no longer holds is removed, alone. A new map entry
//! (`[agents.new]`) is a table of its own placed after its siblings; a new section goes at the
//! end; a new table below an entry (`env`, `grants`) is an inline table.

use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike, Value as EditValue};

use super::error::ConfigError;
use super::schema::{AgentConfig, Config, PermissionProfile, UserConfig};
use super::toml_text::syntax_error;

/// The UTF-8 byte-order mark some Windows editors start a file with.
const BOM: &str = "\u{feff}";

/// Whether `text` ends its lines with CRLF, judged by its first line end.
fn uses_crlf(text: &str) -> bool {
    text.find('\n').is_some_and(|i| text[..i].ends_with('\r'))
}

/// `text` with every LF not already preceded by a CR made CRLF.
fn crlf_line_ends(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut prev = '\0';
    for c in text.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// `text` (the bytes `current` was read from) edited to hold `candidate`; `touched` are the
/// props a request named. The result parses back as exactly `candidate`, or the edit fails.
pub fn edit_text(
    text: &str,
    current: &Config,
    candidate: &Config,
    touched: &[String],
) -> Result<String, ConfigError> {
    // A byte-order mark and CRLF line ends are the file's own spelling, like its comments: the
    // editor would drop the one and write LF for every line it touches, so both are taken off
    // here and put back on the result.
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(body) => (BOM, body),
        None => ("", text),
    };
    let mut doc: DocumentMut = body.parse().map_err(|e: toml_edit::TomlError| {
        let at = e.span().map(|s| s.start);
        ConfigError::save_failed(format!(
            "config.toml does not parse: {}",
            syntax_error(body, at, e.message())
        ))
    })?;
    let before = tree(current)?;
    let after = tree(candidate)?;
    let crlf = uses_crlf(body);
    let mut edit = Edit {
        touched,
        path: Vec::new(),
        lines: if crlf { Lines::Crlf } else { Lines::Lf },
    };
    edit.table(doc.as_table_mut(), Shape::Standard, &before, &after);
    let mut out = doc.to_string();
    if crlf {
        out = crlf_line_ends(&out);
    }
    out.insert_str(0, bom);
    // The file must load back as exactly this config, or the next start would differ.
    match Config::from_toml_str(&out) {
        Ok(reparsed) if reparsed == *candidate => Ok(out),
        _ => Err(ConfigError::save_failed("config does not round-trip")),
    }
}

fn tree(config: &Config) -> Result<toml::Table, ConfigError> {
    toml::Table::try_from(config).map_err(|e| ConfigError::save_failed(e.to_string()))
}

/// The defaults of a map entry that did not exist before (so that its defaults are not
/// mistaken for changes).
fn entry_defaults(path: &[String]) -> toml::Table {
    let t = match path {
        [map, _] if map == "agents" => toml::Table::try_from(AgentConfig::default()),
        [map, _] if map == "permission_profiles" => {
            toml::Table::try_from(PermissionProfile::default())
        }
        [map, _] if map == "users" => toml::Table::try_from(UserConfig::default()),
        _ => Ok(toml::Table::new()),
    };
    t.unwrap_or_default()
}

/// How a document table is written, which decides how a new child table is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `[header]` (or the root).
    Standard,
    /// Dotted keys (`daemon.ask_timeout_secs = 5`).
    Dotted,
    /// `{ … }`.
    Inline,
}

fn shape_of(item: &Item) -> Shape {
    match item {
        Item::Table(t) if t.is_dotted() => Shape::Dotted,
        Item::Table(_) => Shape::Standard,
        _ => Shape::Inline,
    }
}

struct Edit<'a> {
    touched: &'a [String],
    path: Vec<String>,
    /// The file's line ends, which decide how a string with a line break is written.
    lines: Lines,
}

/// How a file ends its lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lines {
    Lf,
    /// CRLF: a string with a line break is written on one line, escaped. The editor would write
    /// a multi-line string, whose raw line breaks are part of the value, and the CRLF put back
    /// on the whole text would then change the value.
    Crlf,
}

impl Edit<'_> {
    fn dotted(&self, key: &str) -> String {
        let mut p = self.path.join(".");
        if !p.is_empty() {
            p.push('.');
        }
        p.push_str(key);
        p
    }

    fn is_touched(&self, key: &str) -> bool {
        let p = self.dotted(key);
        self.touched.contains(&p)
    }

    /// Brings the document table `doc` (which means `before`) to `after`.
    fn table(
        &mut self,
        doc: &mut dyn TableLike,
        shape: Shape,
        before: &toml::Table,
        after: &toml::Table,
    ) {
        for (key, new) in after {
            let old = before.get(key);
            match new {
                toml::Value::Table(new_t) => self.sub_table(doc, shape, key, old, new_t),
                leaf => {
                    let changed = old != Some(leaf);
                    let present = doc.contains_key(key);
                    if changed || (!present && self.is_touched(key)) {
                        set_leaf(doc, shape, key, leaf, self.lines);
                    }
                }
            }
        }
        for key in before.keys().filter(|k| !after.contains_key(*k)) {
            doc.remove(key);
        }
    }

    fn sub_table(
        &mut self,
        doc: &mut dyn TableLike,
        shape: Shape,
        key: &str,
        old: Option<&toml::Value>,
        new: &toml::Table,
    ) {
        self.path.push(key.to_owned());
        let old = match old {
            Some(toml::Value::Table(t)) => t.clone(),
            _ => entry_defaults(&self.path),
        };
        let touched = self.touched.iter().any(|t| *t == self.path.join("."));
        let created = !doc.contains_key(key);
        if created {
            // A section, a map or a map entry is a table of its own (`[agents]` implicit,
            // `[agents.new]`), dotted below dotted keys; anything deeper, or inside an
            // inline table, is inline.
            let item = match shape {
                Shape::Inline => Item::Value(EditValue::InlineTable(InlineTable::new())),
                _ if self.path.len() > 2 => Item::Value(EditValue::InlineTable(InlineTable::new())),
                Shape::Dotted => {
                    let mut t = Table::new();
                    t.set_dotted(true);
                    Item::Table(t)
                }
                Shape::Standard => {
                    let mut t = Table::new();
                    t.set_implicit(self.path.len() == 1 && is_map(key));
                    Item::Table(t)
                }
            };
            doc.insert(key, item);
        }
        let child = doc.get_mut(key);
        let child_shape = child.as_deref().map_or(Shape::Inline, shape_of);
        if let Some(child) = child.and_then(Item::as_table_like_mut) {
            self.table(child, child_shape, &old, new);
            if created && !touched && child.is_empty() {
                doc.remove(key);
            }
        } else {
            // Not a table in the document (cannot happen for a file that loaded): replace it.
            doc.insert(
                key,
                Item::Value(edit_value(&toml::Value::Table(new.clone()), self.lines)),
            );
        }
        self.path.pop();
    }
}

fn is_map(key: &str) -> bool {
    matches!(key, "agents" | "permission_profiles" | "users")
}

/// Sets `doc[key]` to `value`, keeping the key's comments and the value's trailing comment.
/// A key new to an inline table takes over the spacing before its `}` from the entry that
/// was last (`{ A = "1", B = "2" }`, not `{ A = "1" , B = "2" }`).
fn set_leaf(doc: &mut dyn TableLike, shape: Shape, key: &str, value: &toml::Value, lines: Lines) {
    let mut new = edit_value(value, lines);
    if let Some(old) = doc.get_mut(key).and_then(Item::as_value_mut) {
        *new.decor_mut() = old.decor().clone();
        *old = new;
        return;
    }
    if shape == Shape::Inline {
        let last = doc.iter().last().map(|(k, _)| k.to_owned());
        let last = last
            .and_then(|k| doc.get_mut(&k))
            .and_then(Item::as_value_mut);
        if let Some(last) = last {
            if let Some(suffix) = last.decor().suffix().cloned() {
                last.decor_mut().set_suffix("");
                new.decor_mut().set_suffix(suffix);
            }
        }
    }
    doc.insert(key, Item::Value(new));
}

fn edit_value(v: &toml::Value, lines: Lines) -> EditValue {
    match v {
        toml::Value::String(s) if lines == Lines::Crlf && s.contains(['\n', '\r']) => {
            one_line_string(s)
        }
        toml::Value::String(s) => EditValue::from(s.as_str()),
        toml::Value::Integer(i) => EditValue::from(*i),
        toml::Value::Float(f) => EditValue::from(*f),
        toml::Value::Boolean(b) => EditValue::from(*b),
        toml::Value::Datetime(d) => EditValue::from(d.to_string()),
        toml::Value::Array(items) => EditValue::Array(
            items
                .iter()
                .map(|v| edit_value(v, lines))
                .collect::<toml_edit::Array>(),
        ),
        toml::Value::Table(t) => {
            let mut inline = InlineTable::new();
            for (k, v) in t {
                inline.insert(k, edit_value(v, lines));
            }
            EditValue::InlineTable(inline)
        }
    }
}

/// `s` as a basic string on one line, its line breaks escaped (for a CRLF file, see [`Lines`]).
fn one_line_string(s: &str) -> EditValue {
    let mut text = String::with_capacity(s.len() + 8);
    text.push('"');
    for c in s.chars() {
        match c {
            '"' => text.push_str("\\\""),
            '\\' => text.push_str("\\\\"),
            '\n' => text.push_str("\\n"),
            '\r' => text.push_str("\\r"),
            '\t' => text.push_str("\\t"),
            c if c.is_control() => text.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => text.push(c),
        }
    }
    text.push('"');
    match text.parse::<EditValue>() {
        Ok(mut value) => {
            // Spaced like every other value the editor writes.
            value.decor_mut().clear();
            value
        }
        Err(_) => EditValue::from(s),
    }
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
