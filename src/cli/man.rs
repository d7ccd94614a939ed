//! `zeroclaw man [--dir DIR]`: the man pages, generated from the clap
//! definition. Without `--dir` the main page `zeroclaw(1)` goes to stdout;
//! with it every page is written into DIR: `zeroclaw.1` and one
//! `zeroclaw-<sub>[-<subsub>].1` for each subcommand, which are the pages
//! the SUBCOMMANDS section of each page names (docs/operations.md).

use std::io::Write;
use std::path::Path;

/// The command as the pages show it: no `help` subcommand (clap's own, which
/// would otherwise be named in SUBCOMMANDS without a page of its own).
fn for_pages(cmd: clap::Command) -> clap::Command {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// Writes the main page to stdout; the exit status.
pub fn print(cmd: clap::Command) -> i32 {
    let mut out = std::io::stdout().lock();
    match clap_mangen::Man::new(for_pages(cmd)).render(&mut out) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("zeroclaw: writing the man page: {e}");
            1
        }
    }
}

/// Writes every page into `dir` (created if missing) and prints each file
/// written; the exit status.
pub fn write_all(cmd: clap::Command, dir: &Path) -> i32 {
    let written = std::fs::create_dir_all(dir).and_then(|()| write_pages(for_pages(cmd), dir));
    match written {
        Ok(files) => {
            let mut out = std::io::stdout().lock();
            for f in files {
                let _ = writeln!(out, "{}", f.display());
            }
            0
        }
        Err(e) => {
            eprintln!(
                "zeroclaw: writing the man pages into {}: {e}",
                dir.display()
            );
            1
        }
    }
}

/// The page of `cmd`, then those of its visible subcommands, depth first.
fn write_pages(cmd: clap::Command, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files = vec![clap_mangen::Man::new(cmd.clone()).generate_to(dir)?];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        files.extend(write_pages(sub.clone(), dir)?);
    }
    Ok(files)
}
