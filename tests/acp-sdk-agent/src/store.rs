//! The agent's sessions: ids, the cancel flags of their turns, and their
//! history in one JSON file per session (`[[prompt, reply], …]`) under
//! `$ACP_TEST_STATE_DIR` or `<cwd>/.acp-sdk-agent`, so `session/load` works
//! across agent processes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::Error;

/// One prompt and what the agent said to it.
pub type Exchange = (String, String);

#[derive(Debug, Default)]
pub struct Sessions {
    created: u64,
    /// Session id → its state file.
    files: HashMap<String, PathBuf>,
    cancelled: HashSet<String>,
}

fn state_file(cwd: &Path, session: &str) -> Result<PathBuf, Error> {
    let dir = std::env::var_os("ACP_TEST_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| cwd.join(".acp-sdk-agent"));
    std::fs::create_dir_all(&dir).map_err(Error::into_internal_error)?;
    Ok(dir.join(format!("{session}.json")))
}

fn read(file: &Path) -> Result<Vec<Exchange>, Error> {
    let text = std::fs::read_to_string(file).map_err(Error::into_internal_error)?;
    serde_json::from_str(&text).map_err(Error::into_internal_error)
}

impl Sessions {
    /// `session/new`: a fresh id and an empty history.
    pub fn create(&mut self, cwd: &Path) -> Result<String, Error> {
        self.created += 1;
        let id = format!("sdk-{}-{}", std::process::id(), self.created);
        let file = state_file(cwd, &id)?;
        std::fs::write(&file, "[]").map_err(Error::into_internal_error)?;
        self.files.insert(id.clone(), file);
        Ok(id)
    }

    /// `session/load`: the history of a session some process created.
    pub fn load(&mut self, id: &str, cwd: &Path) -> Result<Vec<Exchange>, Error> {
        let file = state_file(cwd, id)?;
        let history =
            read(&file).map_err(|_| Error::new(-32002, format!("unknown session {id}")))?;
        self.files.insert(id.to_owned(), file);
        Ok(history)
    }

    /// The history of a session of this process.
    pub fn history(&self, id: &str) -> Result<Vec<Exchange>, Error> {
        read(self.file(id)?)
    }

    /// Appends a finished turn to the session's history.
    pub fn record(&self, id: &str, exchange: Exchange) -> Result<(), Error> {
        let file = self.file(id)?;
        let mut history = read(file)?;
        history.push(exchange);
        let text = serde_json::to_string(&history).map_err(Error::into_internal_error)?;
        std::fs::write(file, text).map_err(Error::into_internal_error)
    }

    fn file(&self, id: &str) -> Result<&PathBuf, Error> {
        self.files
            .get(id)
            .ok_or_else(|| Error::invalid_params().data(format!("unknown session {id}")))
    }

    pub fn cancel(&mut self, id: &str) {
        self.cancelled.insert(id.to_owned());
    }

    pub fn uncancel(&mut self, id: &str) {
        self.cancelled.remove(id);
    }

    pub fn is_cancelled(&self, id: &str) -> bool {
        self.cancelled.contains(id)
    }
}
