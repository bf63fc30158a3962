//! The operands of `ltx cp`: which are remote (`[user@]host:path`, read as
//! scp reads them), which way the copy goes, and the words of a command
//! line for ssh and for the remote shell.

use std::path::{Path, PathBuf};

use anyhow::bail;
use ltx_cli::exit::Failure;

use super::fail;

/// A `[user@]host:path` operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RemotePath {
    /// What ssh is given: `[user@]host`, an IPv6 literal without brackets.
    pub(super) destination: String,
    /// The host alone, for messages.
    pub(super) host: String,
    /// The path on the host, relative to the home directory unless
    /// absolute; empty for the home directory itself.
    pub(super) path: String,
}

/// Which way a copy goes, from the command line's operands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Plan {
    /// Local files into a directory on the remote host.
    Push {
        /// The local files and directories.
        sources: Vec<PathBuf>,
        /// The remote directory.
        to: RemotePath,
    },
    /// Remote files into a local directory.
    Pull {
        /// The remote files and directories, all on one host.
        from: Vec<RemotePath>,
        /// The local directory.
        to: PathBuf,
    },
}

impl Plan {
    /// Reads `SOURCE... DEST`: exactly one side is remote.
    pub(super) fn from_operands(operands: &[String]) -> anyhow::Result<Plan> {
        let usage = |message: String| fail(Failure::Usage, message);
        let Some((dest, sources)) = operands.split_last().filter(|(_, s)| !s.is_empty()) else {
            return Err(usage(
                "ltx cp needs a source and a destination: FILE... [user@]host:DIR, \
                 or [user@]host:FILE... DIR"
                    .into(),
            ));
        };
        let dest_remote = parse_remote(dest).map_err(usage)?;
        let mut remote_sources = Vec::new();
        let mut local_sources = Vec::new();
        for source in sources {
            match parse_remote(source).map_err(usage)? {
                Some(remote) => remote_sources.push(remote),
                None => local_sources.push(PathBuf::from(source)),
            }
        }
        match (
            dest_remote,
            remote_sources.is_empty(),
            local_sources.is_empty(),
        ) {
            (Some(to), true, false) => Ok(Plan::Push {
                sources: local_sources,
                to,
            }),
            (None, false, true) => {
                let host = &remote_sources[0].destination;
                if let Some(other) = remote_sources.iter().find(|r| &r.destination != host) {
                    return Err(usage(format!(
                        "the sources are on {host} and {}: ltx cp pulls from one host at a time",
                        other.destination
                    )));
                }
                Ok(Plan::Pull {
                    from: remote_sources,
                    to: PathBuf::from(dest),
                })
            }
            (Some(_), false, _) => Err(usage(
                "copies between two remote hosts are not supported: run ltx cp on one of them"
                    .into(),
            )),
            (None, true, false) => Err(usage(format!(
                "no operand names a remote host ([user@]host:PATH): ltx cp copies between \
                 machines (a local name with a colon is written ./{dest})"
            ))),
            _ => Err(usage(
                "the sources mix local and remote files: copy in one direction at a time".into(),
            )),
        }
    }

    /// The remote end of the copy: where ssh connects.
    pub(super) fn remote(&self) -> &RemotePath {
        match self {
            Plan::Push { to, .. } => to,
            Plan::Pull { from, .. } => &from[0],
        }
    }
}

/// Reads `[user@]host:path` (also `[user@][v6addr]:path`) as scp does: an
/// operand is local if it has no colon, starts with one, or has a slash
/// before its first colon. A remote operand with an empty host, or one
/// that would read as an ssh option, is an error.
pub(super) fn parse_remote(operand: &str) -> Result<Option<RemotePath>, String> {
    let mut in_brackets = false;
    let mut colon = None;
    for (i, c) in operand.char_indices() {
        match c {
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            '/' if !in_brackets => return Ok(None),
            ':' if !in_brackets => {
                colon = Some(i);
                break;
            }
            _ => {}
        }
    }
    let Some(colon) = colon.filter(|&i| i > 0) else {
        return Ok(None);
    };
    let (user_host, path) = (&operand[..colon], &operand[colon + 1..]);
    let (user, host) = match user_host.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, user_host),
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || user == Some("") {
        return Err(format!("{operand:?}: no host before the colon"));
    }
    if host.starts_with('-') || user.is_some_and(|u| u.starts_with('-')) {
        return Err(format!("{operand:?}: a host name cannot start with '-'"));
    }
    let destination = match user {
        Some(user) => format!("{user}@{host}"),
        None => host.to_owned(),
    };
    Ok(Some(RemotePath {
        destination,
        host: host.to_owned(),
        path: path.to_owned(),
    }))
}

/// Checks a destination directory before anything is sent to it: it must
/// be a directory, or end with `/` to be created. Without that rule a
/// mistyped name (or scp's habit of naming the copy) would silently become
/// a new directory. An empty path is the current (home) directory.
pub(super) fn destination_dir(path: &str, place: &str) -> anyhow::Result<PathBuf> {
    if path.is_empty() {
        return Ok(PathBuf::from("."));
    }
    let dir = PathBuf::from(path);
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(fail(
            Failure::LocalFile,
            format!(
                "{path} on {place} is not a directory: ltx cp copies into a directory \
                 (the files keep their names)"
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.ends_with('/') => Ok(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(fail(
            Failure::LocalFile,
            format!(
                "{path} does not exist on {place}: ltx cp copies into a directory; \
                 write {path}/ to have it created"
            ),
        )),
        Err(e) => Err(fail(
            Failure::LocalFile,
            format!("looking at {path} on {place}: {e}"),
        )),
    }
}

/// Checks that every local source exists, before ssh is started for them.
pub(super) fn check_sources(sources: &[PathBuf], place: &str) -> anyhow::Result<()> {
    for source in sources {
        if let Err(e) = std::fs::symlink_metadata(source) {
            return Err(fail(
                Failure::LocalFile,
                format!("{} on {place}: {e}", source.display()),
            ));
        }
    }
    Ok(())
}

/// `~` and `~/...` as the remote user's home, which the remote shell would
/// have expanded had the path not been quoted.
pub(super) fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_owned(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    }
}

/// One word for a POSIX shell (and for fish, zsh and csh, which read
/// single quotes alike): as it is when it holds no special character,
/// otherwise single-quoted.
pub(super) fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits a command such as `--ssh "ssh -p 2222 -i 'my key'"` into words,
/// as a shell would without expanding anything: blanks separate words;
/// single quotes keep everything; double quotes keep everything but `\"`
/// and `\\`; a backslash outside quotes keeps the next character.
pub(super) fn split_words(command: &str) -> anyhow::Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => bail!("{command:?}: a single quote is not closed"),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => bail!("{command:?}: a double quote is not closed"),
                        },
                        Some(c) => w.push(c),
                        None => bail!("{command:?}: a double quote is not closed"),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => bail!("{command:?}: ends with a backslash"),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(operand: &str) -> Option<RemotePath> {
        parse_remote(operand).expect("a valid operand")
    }

    #[test]
    fn remote_operands_are_read_as_scp_reads_them() {
        let r = remote("alice@box:photos/").expect("remote");
        assert_eq!(
            (r.destination.as_str(), r.host.as_str()),
            ("alice@box", "box")
        );
        assert_eq!(r.path, "photos/");
        let r = remote("box:").expect("remote");
        assert_eq!((r.destination.as_str(), r.path.as_str()), ("box", ""));
        let r = remote("bob@[2001:db8::1]:/srv/x").expect("remote");
        assert_eq!(r.destination, "bob@2001:db8::1");
        assert_eq!(r.path, "/srv/x");
        let r = remote("box:a:b@c").expect("remote");
        assert_eq!((r.destination.as_str(), r.path.as_str()), ("box", "a:b@c"));
    }

    #[test]
    fn local_operands_stay_local() {
        for local in ["file", "./a:b", "/abs/a:b", "dir/x:y", ":leading", ""] {
            assert_eq!(remote(local), None, "{local}");
        }
    }

    #[test]
    fn hosts_that_ssh_would_read_as_options_are_refused() {
        assert!(parse_remote("-oProxyCommand=x:path").is_err());
        assert!(parse_remote("@box:path").is_err());
        assert!(parse_remote("[]:path").is_err());
    }

    #[test]
    fn the_direction_comes_from_the_remote_operand() {
        let words = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert!(matches!(
            Plan::from_operands(&words("a b box:dir/")),
            Ok(Plan::Push { sources, .. }) if sources.len() == 2
        ));
        assert!(matches!(
            Plan::from_operands(&words("box:a box:b .")),
            Ok(Plan::Pull { from, .. }) if from.len() == 2
        ));
        for refused in [
            "a b",
            "box:a other:b .",
            "box:a other:dir",
            "a box:b .",
            "box:a",
        ] {
            let error = Plan::from_operands(&words(refused)).expect_err(refused);
            assert_eq!(
                super::super::failure(&error),
                Some(Failure::Usage),
                "{refused}"
            );
        }
    }

    #[test]
    fn quoted_words_survive_the_remote_shell() {
        assert_eq!(shell_quote("plain/path-1.txt"), "plain/path-1.txt");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's here"), r"'it'\''s here'");
        assert_eq!(shell_quote("$HOME;rm"), "'$HOME;rm'");
    }

    #[test]
    fn an_ssh_command_splits_like_a_shell_would() {
        let words = split_words(r#"ssh -p 2222 -i 'my key' -o "ProxyJump=a b" x\ y"#).unwrap();
        assert_eq!(
            words,
            [
                "ssh",
                "-p",
                "2222",
                "-i",
                "my key",
                "-o",
                "ProxyJump=a b",
                "x y"
            ]
        );
        assert!(split_words("ssh 'open").is_err());
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_tilde_is_the_remote_home() {
        let home = Path::new("/home/a");
        assert_eq!(expand_home("~", Some(home)), PathBuf::from("/home/a"));
        assert_eq!(
            expand_home("~/x/y", Some(home)),
            PathBuf::from("/home/a/x/y")
        );
        assert_eq!(expand_home("~bob/x", Some(home)), PathBuf::from("~bob/x"));
        assert_eq!(expand_home("x", Some(home)), PathBuf::from("x"));
    }
}
