//! The API key of one turn (docs/config.md): the daemon's environment
//! variable `api_key_env` names, or the file `api_key_file` names, read at
//! turn start. A key in a file is never in the daemon's environment block
//! (`/proc/<pid>/environ`), which every same-uid process can read unless the
//! daemon is non-dumpable ([`crate::agent::reaper`]); the file must be a
//! regular file readable by its owner only (like ssh's keys), at most
//! [`MAX_KEY_FILE`] bytes, its text trimmed.

use std::path::Path;

use crate::bounded_file::{self, ReadError};

use crate::config::agent_spec::OpenAiSettings;

/// The most a key file may hold.
pub const MAX_KEY_FILE: u64 = 16 * 1024;

/// The key, `None` when none is configured, or why the turn fails (never
/// the key itself).
pub fn api_key(settings: &OpenAiSettings) -> Result<Option<String>, String> {
    if let Some(path) = &settings.api_key_file {
        return from_file(path).map(Some);
    }
    let Some(name) = &settings.api_key_env else {
        return Ok(None);
    };
    match std::env::var(name) {
        Ok(key) if !key.is_empty() => Ok(Some(key)),
        // The name is config; the value is never logged or echoed.
        _ => Err(format!(
            "the API key variable {name} is not set in the daemon's environment"
        )),
    }
}

/// The key in the file at `path`, checked as above.
pub fn from_file(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let fail = |why: String| format!("the API key file {shown} {why}");
    // Read at turn start and whenever a commit installs the secrets to mask (under the config
    // write lock): a FIFO or a device at the path is refused at once instead of blocking there.
    let (file, meta) = bounded_file::open(path).map_err(|e| match e {
        ReadError::Io(e) => fail(format!("cannot be read: {e}")),
        e => fail(e.to_string()),
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(fail(format!(
                "is readable by others (mode {mode:03o}); make it 600"
            )));
        }
    }
    let bytes = bounded_file::read_opened(file, &meta, MAX_KEY_FILE).map_err(|e| match e {
        ReadError::TooLarge { .. } => fail(format!("is over {MAX_KEY_FILE} bytes")),
        e => fail(format!("cannot be read: {e}")),
    })?;
    let text =
        String::from_utf8(bytes).map_err(|_| fail("cannot be read: not UTF-8".to_owned()))?;
    let key = text.trim();
    if key.is_empty() {
        return Err(fail("is empty".to_owned()));
    }
    Ok(key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_private_trimmed_and_bounded() {
        let dir = std::env::temp_dir().join(format!("zc-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        std::fs::write(&path, "sk-file\n").unwrap();
        let settings = OpenAiSettings {
            api_key_file: Some(path.clone()),
            ..OpenAiSettings::default()
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let set = |m| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m));
            set(0o644).unwrap();
            let e = api_key(&settings).unwrap_err();
            assert!(
                e.ends_with("is readable by others (mode 644); make it 600"),
                "{e}"
            );
            set(0o600).unwrap();
        }
        assert_eq!(api_key(&settings).unwrap().as_deref(), Some("sk-file"));
        std::fs::write(&path, " \n").unwrap();
        assert!(api_key(&settings).unwrap_err().ends_with("is empty"));
        std::fs::write(&path, "k".repeat(MAX_KEY_FILE as usize + 1)).unwrap();
        assert!(api_key(&settings)
            .unwrap_err()
            .ends_with("is over 16384 bytes"));
        let gone = OpenAiSettings {
            api_key_file: Some(dir.join("none")),
            ..OpenAiSettings::default()
        };
        assert!(api_key(&gone).unwrap_err().contains("cannot be read"));
        assert_eq!(api_key(&OpenAiSettings::default()), Ok(None));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
