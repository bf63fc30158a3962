//! Which local files `ltx send` sends, and under which names.
//!
//! A file named on the command line is sent under its own file name. A
//! directory is sent only with `-r`, as its own name followed by each file's
//! path inside it (`photos/2024/a.jpg`), so the receiver rebuilds the tree
//! under its directory; it checks every component and creates the
//! directories itself, and never follows a link on the way.
//!
//! Symbolic links named on the command line are followed, as the user chose
//! them. Inside a directory they are skipped, as are sockets, FIFOs and
//! devices: following them could leave the tree or never end. With
//! [`PlanOptions::links`] every link, named or found, is sent as a link
//! instead (as `rsync -l` does). Empty directories are not sent, as there
//! is no file to carry them.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use super::name::{LinkTarget, NameError, TransferName};

/// One file to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// Where it is here.
    pub local: PathBuf,
    /// The name it gets on the receiver.
    pub name: TransferName,
    /// Its length when it was listed, for an overall progress bar (a
    /// link's: 0).
    pub size: u64,
    /// A regular file, or a link sent as a link.
    pub kind: PlannedKind,
}

/// What a planned file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannedKind {
    /// A regular file: its data is sent.
    File,
    /// A symbolic link, sent as a link to this target.
    Link(LinkTarget),
}

/// What a plan takes in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// Send directories with everything in them.
    pub recursive: bool,
    /// Send symbolic links as links instead of following the ones named
    /// and skipping the ones found.
    pub links: bool,
}

/// What a walk over a directory left out, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// A symbolic link inside a directory.
    Symlink,
    /// A socket, FIFO or device.
    Special,
    /// A symbolic link whose target cannot be sent (not UTF-8, or holding
    /// control characters).
    LinkTarget,
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SkipReason::Symlink => "a symbolic link (not followed; --links sends links)",
            SkipReason::Special => "not a regular file",
            SkipReason::LinkTarget => "a symbolic link whose target cannot be sent",
        })
    }
}

/// The files to send, in order, and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The files, in the order given, each directory's sorted by name.
    pub files: Vec<PlannedFile>,
    /// Entries of directories that are not sent.
    pub skipped: Vec<(PathBuf, SkipReason)>,
}

/// Why the paths cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A path could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A directory without `-r`.
    #[error("{} is a directory (use -r to send directories)", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
    },
    /// A path named on the command line that is neither file nor directory.
    #[error("{} is not a regular file or a directory", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// A path without a last component to name it by, such as `/`.
    #[error("{} has no name to send it under", path.display())]
    NoName {
        /// The path.
        path: PathBuf,
    },
    /// A file whose name the receiver would refuse.
    #[error("{} cannot be sent under the name {shown:?}: {error}", path.display())]
    BadName {
        /// The file.
        path: PathBuf,
        /// The name it would have had.
        shown: String,
        /// The rule it breaks.
        error: NameError,
    },
    /// Two files would land at the same name, or one would need to be a
    /// directory for the other.
    #[error("{} and {} would both arrive as {name}", first.display(), second.display())]
    Collision {
        /// The name they share.
        name: String,
        /// The first path.
        first: PathBuf,
        /// The second path.
        second: PathBuf,
    },
}

/// Lists the files `paths` stand for, each with its transfer name
/// (directories only if `recursive`; links followed or skipped).
///
/// It reads the file system as it goes, so a caller on an async runtime with
/// a large tree runs it in `spawn_blocking`.
pub fn plan_transfers(paths: &[PathBuf], recursive: bool) -> Result<Plan, PlanError> {
    plan_transfers_with(
        paths,
        PlanOptions {
            recursive,
            links: false,
        },
    )
}

/// Lists the files `paths` stand for, each with its transfer name, as
/// `options` say.
pub fn plan_transfers_with(paths: &[PathBuf], options: PlanOptions) -> Result<Plan, PlanError> {
    let mut plan = Plan::default();
    for path in paths {
        let io_error = |source| PlanError::Io {
            path: path.clone(),
            source,
        };
        let top = top_name(path)?;
        if options.links {
            let own = std::fs::symlink_metadata(path).map_err(io_error)?;
            if own.file_type().is_symlink() {
                let name = checked_name(path, top)?;
                push_link(&mut plan, path.clone(), name)?;
                continue;
            }
        }
        let meta = std::fs::metadata(path).map_err(io_error)?;
        if meta.is_file() {
            let name = checked_name(path, top)?;
            plan.files.push(PlannedFile {
                local: path.clone(),
                name,
                size: meta.len(),
                kind: PlannedKind::File,
            });
        } else if meta.is_dir() {
            if !options.recursive {
                return Err(PlanError::Directory { path: path.clone() });
            }
            walk(path, &top, options, &mut plan)?;
        } else {
            return Err(PlanError::NotAFile { path: path.clone() });
        }
    }
    check_collisions(&plan.files)?;
    Ok(plan)
}

/// The name a path on the command line is sent under: its last component,
/// or, for paths such as `.` that have none, the last component of the
/// directory it stands for.
fn top_name(path: &Path) -> Result<String, PlanError> {
    let canonical;
    let file_name = match path.file_name() {
        Some(name) => name,
        None => {
            canonical = std::fs::canonicalize(path).map_err(|source| PlanError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            canonical.file_name().ok_or_else(|| PlanError::NoName {
                path: path.to_path_buf(),
            })?
        }
    };
    file_name
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| PlanError::BadName {
            path: path.to_path_buf(),
            shown: file_name.to_string_lossy().into_owned(),
            error: NameError::NotUtf8,
        })
}

fn checked_name(path: &Path, name: String) -> Result<TransferName, PlanError> {
    TransferName::parse(&name).map_err(|error| PlanError::BadName {
        path: path.to_path_buf(),
        shown: name,
        error,
    })
}

/// Adds the link at `path` to the plan, or to what is skipped if its target
/// cannot be sent.
fn push_link(plan: &mut Plan, path: PathBuf, name: TransferName) -> Result<(), PlanError> {
    let target = std::fs::read_link(&path).map_err(|source| PlanError::Io {
        path: path.clone(),
        source,
    })?;
    match target.to_str().map(LinkTarget::parse) {
        Some(Ok(target)) => plan.files.push(PlannedFile {
            local: path,
            name,
            size: 0,
            kind: PlannedKind::Link(target),
        }),
        _ => plan.skipped.push((path, SkipReason::LinkTarget)),
    }
    Ok(())
}

fn walk(dir: &Path, prefix: &str, options: PlanOptions, plan: &mut Plan) -> Result<(), PlanError> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PlanError::Io { path, source }
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(io_error(dir))?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io_error(dir))?;
    // Sorted, so that the same tree is always sent in the same order.
    entries.sort();
    for path in entries {
        // Not followed: a link is judged as a link.
        let meta = std::fs::symlink_metadata(&path).map_err(io_error(&path))?;
        let kind = meta.file_type();
        if kind.is_symlink() && !options.links {
            plan.skipped.push((path, SkipReason::Symlink));
            continue;
        }
        if !kind.is_file() && !kind.is_dir() && !kind.is_symlink() {
            plan.skipped.push((path, SkipReason::Special));
            continue;
        }
        let Some(component) = path.file_name().and_then(|name| name.to_str()) else {
            return Err(PlanError::BadName {
                shown: path.to_string_lossy().into_owned(),
                path,
                error: NameError::NotUtf8,
            });
        };
        let name = format!("{prefix}/{component}");
        if kind.is_symlink() {
            let name = checked_name(&path, name)?;
            push_link(plan, path, name)?;
        } else if kind.is_dir() {
            walk(&path, &name, options, plan)?;
        } else {
            let name = checked_name(&path, name)?;
            plan.files.push(PlannedFile {
                local: path,
                name,
                size: meta.len(),
                kind: PlannedKind::File,
            });
        }
    }
    Ok(())
}

/// Refuses two files with one name, and a file whose name another file
/// needs as a directory (`a` and `a/b`): the receiver could store only one.
fn check_collisions(files: &[PlannedFile]) -> Result<(), PlanError> {
    let mut by_name: BTreeMap<&str, &Path> = BTreeMap::new();
    for file in files {
        if let Some(first) = by_name.insert(file.name.as_str(), &file.local) {
            return Err(PlanError::Collision {
                name: file.name.to_string(),
                first: first.to_path_buf(),
                second: file.local.clone(),
            });
        }
    }
    for file in files {
        let name = file.name.as_str();
        for (at, _) in name.match_indices('/') {
            if let Some(first) = by_name.get(&name[..at]) {
                return Err(PlanError::Collision {
                    name: name[..at].to_owned(),
                    first: first.to_path_buf(),
                    second: file.local.clone(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn names(plan: &Plan) -> Vec<&str> {
        plan.files.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn files_keep_their_names_and_directories_their_tree() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a.txt");
        fs::write(&a, b"aaa").unwrap();
        let tree = root.path().join("tree");
        fs::create_dir_all(tree.join("sub/deeper")).unwrap();
        fs::create_dir_all(tree.join("empty")).unwrap();
        fs::write(tree.join("z"), b"z").unwrap();
        fs::write(tree.join("sub/b"), b"bb").unwrap();
        fs::write(tree.join("sub/deeper/c"), b"c").unwrap();

        let plan = plan_transfers(&[a.clone(), tree.clone()], true).unwrap();
        assert_eq!(
            names(&plan),
            ["a.txt", "tree/sub/b", "tree/sub/deeper/c", "tree/z"]
        );
        assert_eq!(plan.files[0].local, a);
        assert_eq!(plan.files[0].size, 3);
        assert_eq!(plan.files[1].local, tree.join("sub/b"));
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn a_directory_needs_recursion() {
        let root = tempfile::tempdir().unwrap();
        let error = plan_transfers(&[root.path().to_path_buf()], false).unwrap_err();
        assert!(matches!(error, PlanError::Directory { .. }), "{error}");
        assert!(error.to_string().contains("use -r"));
    }

    #[test]
    fn dot_is_sent_under_the_directory_name() {
        let root = tempfile::tempdir().unwrap();
        let tree = root.path().join("named");
        fs::create_dir(&tree).unwrap();
        fs::write(tree.join("f"), b"f").unwrap();
        let plan = plan_transfers(&[tree.join(".")], true).unwrap();
        assert_eq!(names(&plan), ["named/f"]);
    }

    #[test]
    fn the_same_name_twice_is_refused() {
        let root = tempfile::tempdir().unwrap();
        for dir in ["one", "two"] {
            fs::create_dir(root.path().join(dir)).unwrap();
            fs::write(root.path().join(dir).join("same"), dir).unwrap();
        }
        let paths = [root.path().join("one/same"), root.path().join("two/same")];
        let error = plan_transfers(&paths, false).unwrap_err();
        assert!(matches!(error, PlanError::Collision { ref name, .. } if name == "same"));
    }

    #[test]
    fn a_file_where_a_directory_must_go_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("one/x");
        let tree = root.path().join("x");
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, b"file").unwrap();
        fs::create_dir(&tree).unwrap();
        fs::write(tree.join("inner"), b"inner").unwrap();
        let error = plan_transfers(&[file, tree], true).unwrap_err();
        assert!(matches!(error, PlanError::Collision { ref name, .. } if name == "x"));
    }

    #[test]
    fn a_name_the_receiver_would_refuse_fails_early() {
        let root = tempfile::tempdir().unwrap();
        let part = root.path().join("left.ltx-part");
        fs::write(&part, b"").unwrap();
        let error = plan_transfers(&[part], false).unwrap_err();
        assert!(matches!(
            error,
            PlanError::BadName {
                error: NameError::Reserved,
                ..
            }
        ));
    }

    #[test]
    fn missing_paths_are_reported() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("missing");
        let error = plan_transfers(std::slice::from_ref(&missing), false).unwrap_err();
        assert!(error.to_string().contains("missing"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn links_inside_a_tree_are_skipped_and_links_named_are_followed() {
        use std::os::unix::fs::symlink;

        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        fs::write(&outside, b"secret").unwrap();
        let tree = root.path().join("tree");
        fs::create_dir(&tree).unwrap();
        fs::write(tree.join("real"), b"real").unwrap();
        symlink(&outside, tree.join("link")).unwrap();
        symlink(root.path(), tree.join("loop")).unwrap();
        let named = root.path().join("named-link");
        symlink(&outside, &named).unwrap();

        let plan = plan_transfers(&[tree.clone(), named.clone()], true).unwrap();
        assert_eq!(names(&plan), ["tree/real", "named-link"]);
        assert_eq!(plan.files[1].local, named);
        assert_eq!(
            plan.skipped,
            [
                (tree.join("link"), SkipReason::Symlink),
                (tree.join("loop"), SkipReason::Symlink)
            ]
        );

        // With links, every link is a link, named or found, and nothing is
        // followed.
        let links = PlanOptions {
            recursive: true,
            links: true,
        };
        let plan = plan_transfers_with(&[tree.clone(), named.clone()], links).unwrap();
        assert_eq!(
            names(&plan),
            ["tree/link", "tree/loop", "tree/real", "named-link"]
        );
        let target = |i: usize| match &plan.files[i].kind {
            PlannedKind::Link(target) => target.as_str().to_owned(),
            PlannedKind::File => panic!("{:?} is a file", plan.files[i]),
        };
        assert_eq!(target(0), outside.to_str().unwrap());
        assert_eq!(target(3), outside.to_str().unwrap());
        assert_eq!(plan.files[2].kind, PlannedKind::File);
        assert!(plan.skipped.is_empty());
    }
}
