//! `ltx completions` and `ltx man`: shell completions and manual pages
//! generated from the command line's own definition, so they never
//! disagree with it.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Command};
use clap_complete::Shell;

/// The shell to complete for.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell. For bash, e.g.:
    /// `ltx completions bash > ~/.local/share/bash-completion/completions/ltx`.
    shell: Shell,
}

/// Where the manual pages go.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// The directory to write `ltx.1` and a page per subcommand
    /// (`ltx-send.1`, `ltx-tunnel-server.1`, …) into; made if needed.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Prints the completion script of `command` for the shell asked for.
pub(crate) fn completions(args: &CompletionsArgs, mut command: Command) -> anyhow::Result<()> {
    let name = command.get_name().to_owned();
    clap_complete::generate(args.shell, &mut command, name, &mut std::io::stdout());
    Ok(())
}

/// Writes the manual pages of `command` and its subcommands.
pub(crate) fn man(args: &ManArgs, command: Command) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.out).with_context(|| format!("making {}", args.out.display()))?;
    let mut written = Vec::new();
    write_pages(&args.out, command.name("ltx"), &mut written)?;
    eprintln!("wrote {} pages into {}", written.len(), args.out.display());
    Ok(())
}

/// Writes the page of `command` (named as its path of subcommands) and of
/// each of its subcommands.
fn write_pages(dir: &Path, command: Command, written: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let name = command.get_name().to_owned();
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut page)
        .with_context(|| format!("rendering {name}"))?;
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let full = format!("{name}-{}", sub.get_name());
        write_pages(dir, sub.clone().name(full), written)?;
    }
    Ok(())
}
