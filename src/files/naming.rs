//! How a stored file is named and announced (§8.17): its extension,
//! its MIME type when the client gives none, and the marker the agent sees.
//! The client's filename never reaches the stored path except through a
//! short, lowercase, alphanumeric extension.

/// Longest `filename`, in bytes of UTF-8.
pub const MAX_FILENAME_BYTES: usize = 255;

/// The stored file's extension: the filename's, lowercased, if it is 1–16
/// ASCII alphanumerics; else none.
pub fn extension(filename: &str) -> Option<String> {
    let (stem, ext) = filename.rsplit_once('.')?;
    let ok = !stem.is_empty()
        && (1..=16).contains(&ext.len())
        && ext.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then(|| ext.to_ascii_lowercase())
}

/// A MIME type guessed from the filename's extension (`application/octet-stream` if unknown).
pub fn guess_mime(filename: &str) -> &'static str {
    match extension(filename).as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("bmp") => "image/bmp",
        Some("svg") => "image/svg+xml",
        Some("txt" | "log") => "text/plain",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("json") => "application/json",
        Some("toml") => "application/toml",
        Some("yaml" | "yml") => "application/yaml",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        Some("rs" | "py" | "js" | "ts" | "go" | "c" | "h" | "cpp" | "java" | "sh") => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The filename as it may appear in a marker: `/`, `\` and control
/// characters replaced by `_`.
pub fn display_name(filename: &str) -> String {
    filename
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The marker appended to a prompt for a stored file.
pub fn marker(
    mime: &str,
    filename: &str,
    workspace_path: &str,
    original_path: Option<&str>,
) -> String {
    if mime.starts_with("image/") {
        format!("[IMAGE:{}]", original_path.unwrap_or(workspace_path))
    } else {
        format!("[Document: {}] {workspace_path}", display_name(filename))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions() {
        assert_eq!(extension("notes.TXT").as_deref(), Some("txt"));
        assert_eq!(extension("a.tar.gz").as_deref(), Some("gz"));
        assert_eq!(extension("noext"), None);
        assert_eq!(extension(".bashrc"), None);
        assert_eq!(extension("x.é"), None);
        assert_eq!(extension("x.abcdefghijklmnopq"), None);
        assert_eq!(extension("../../etc/passwd"), None);
        assert_eq!(extension("evil./../x"), None);
    }

    #[test]
    fn markers() {
        assert_eq!(
            marker("text/plain", "notes.txt", "/w/uploads/ab.txt", None),
            "[Document: notes.txt] /w/uploads/ab.txt"
        );
        assert_eq!(
            marker("image/png", "a.png", "/w/uploads/ab.png", None),
            "[IMAGE:/w/uploads/ab.png]"
        );
        assert_eq!(
            marker(
                "image/png",
                "a.png",
                "/w/uploads/ab.png",
                Some("/home/a.png")
            ),
            "[IMAGE:/home/a.png]"
        );
        assert_eq!(display_name("../a\\b\nc\u{7f}"), ".._a_b_c_");
        assert_eq!(guess_mime("x.JPG"), "image/jpeg");
        assert_eq!(guess_mime("upload"), "application/octet-stream");
    }
}
