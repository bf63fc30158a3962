//! Transfer names: the path a file is given on the receiver, relative to the
//! receiver's directory.
//!
//! A name is one or more components separated by `/`. Every component must
//! be a plain file name: not empty, not `.` or `..`, no `\`, no NUL or other
//! control character, at most [`MAX_COMPONENT_LEN`] bytes, and not ending in
//! [`PART_SUFFIX`], which the receiver keeps for its partial files. The name
//! must not start with `/`. A [`TransferName`] can only be built through
//! these checks, so a receiver holding one can join it onto its directory
//! without looking at it again.

use std::fmt;
use std::path::{Path, PathBuf};

/// The longest name in bytes, all components and separators together.
pub const MAX_NAME_LEN: usize = 0x0400;

/// The longest component in bytes: the usual `NAME_MAX` of Unix file systems.
pub const MAX_COMPONENT_LEN: usize = 0xFF;

/// The suffix of the receiver's partial files, which no component of a
/// transfer name may end in, so that a transfer can never land on, or make a
/// directory of, another's partial file.
pub const PART_SUFFIX: &str = ".ltx-part";

/// A name that is safe to create under the receiver's directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransferName(String);

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name has no bytes at all.
    #[error("the name is empty")]
    Empty,
    /// The name is longer than [`MAX_NAME_LEN`].
    #[error("the name is {len} bytes long; the limit is {MAX_NAME_LEN}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The name is not valid UTF-8.
    #[error("the name is not UTF-8")]
    NotUtf8,
    /// The name starts with `/`.
    #[error("the name is an absolute path")]
    Absolute,
    /// The name contains `\`, a separator on some systems.
    #[error("the name contains a backslash")]
    Backslash,
    /// The name contains NUL or another control character.
    #[error("the name contains a NUL or control character")]
    Control,
    /// Two separators in a row, or one at the end.
    #[error("the name has an empty component")]
    EmptyComponent,
    /// A component is `.` or `..`.
    #[error("the name has a '.' or '..' component")]
    DotComponent,
    /// A component is longer than [`MAX_COMPONENT_LEN`].
    #[error("a component of the name is {len} bytes long; the limit is {MAX_COMPONENT_LEN}")]
    ComponentTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A component ends in [`PART_SUFFIX`].
    #[error("a component of the name ends in {PART_SUFFIX}, which is kept for partial files")]
    Reserved,
}

impl TransferName {
    /// Checks a name received from the network.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, NameError> {
        // The length comes first so that a huge name costs nothing more.
        if bytes.len() > MAX_NAME_LEN {
            return Err(NameError::TooLong { len: bytes.len() });
        }
        let name = std::str::from_utf8(bytes).map_err(|_| NameError::NotUtf8)?;
        Self::parse(name)
    }

    /// Checks a name.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if name.len() > MAX_NAME_LEN {
            return Err(NameError::TooLong { len: name.len() });
        }
        if name.starts_with('/') {
            return Err(NameError::Absolute);
        }
        if name.contains('\\') {
            return Err(NameError::Backslash);
        }
        // Control characters would also let a name rewrite the terminal of
        // whoever lists the directory.
        if name.chars().any(char::is_control) {
            return Err(NameError::Control);
        }
        for component in name.split('/') {
            match component {
                "" => return Err(NameError::EmptyComponent),
                "." | ".." => return Err(NameError::DotComponent),
                c if c.len() > MAX_COMPONENT_LEN => {
                    return Err(NameError::ComponentTooLong { len: c.len() })
                }
                c if c.ends_with(PART_SUFFIX) => return Err(NameError::Reserved),
                _ => {}
            }
        }
        Ok(Self(name.to_owned()))
    }

    /// The name as sent on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name's components, outermost directory first, file name last.
    pub(crate) fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The last component: the file's own name.
    pub(crate) fn file_name(&self) -> &str {
        // A checked name is never empty, so it has a last component.
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The path this name has under `dir`.
    pub(crate) fn under(&self, dir: &Path) -> PathBuf {
        let mut path = dir.to_path_buf();
        path.extend(self.components());
        path
    }
}

impl fmt::Display for TransferName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a symbolic link points, as sent: 1 to [`MAX_NAME_LEN`] bytes of
/// UTF-8 without NUL or other control characters. Any such target can be
/// sent; the receiver creates only those that stay inside its directory
/// (see [`stays_inside`](Self::stays_inside)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkTarget(String);

impl LinkTarget {
    /// Checks a target received from the network.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, NameError> {
        if bytes.len() > MAX_NAME_LEN {
            return Err(NameError::TooLong { len: bytes.len() });
        }
        let target = std::str::from_utf8(bytes).map_err(|_| NameError::NotUtf8)?;
        Self::parse(target)
    }

    /// Checks a target.
    pub fn parse(target: &str) -> Result<Self, NameError> {
        if target.is_empty() {
            return Err(NameError::Empty);
        }
        if target.len() > MAX_NAME_LEN {
            return Err(NameError::TooLong { len: target.len() });
        }
        if target.chars().any(char::is_control) {
            return Err(NameError::Control);
        }
        Ok(Self(target.to_owned()))
    }

    /// The target as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether a link at `name` under a directory, pointing here, leads to
    /// somewhere inside that directory: the target is relative and its
    /// `..` never climb above the directory (rsync's "safe links").
    pub fn stays_inside(&self, name: &TransferName) -> bool {
        if self.0.starts_with('/') {
            return false;
        }
        // The link's own directory, as a depth below the top.
        let mut depth = name.components().count() - 1;
        for component in self.0.split('/') {
            match component {
                "" | "." => {}
                ".." => match depth.checked_sub(1) {
                    Some(up) => depth = up,
                    None => return false,
                },
                _ => depth += 1,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names a hostile or careless sender could use to write outside the
    /// receiver's directory or over its partial files; each is refused with
    /// the reason shown.
    #[test]
    fn hostile_names_are_refused() {
        let long_component = "a".repeat(MAX_COMPONENT_LEN + 1);
        let long_name = ["a"; MAX_NAME_LEN / 2 + 1].join("/");
        let cases: &[(&str, NameError)] = &[
            ("", NameError::Empty),
            (".", NameError::DotComponent),
            ("..", NameError::DotComponent),
            ("../x", NameError::DotComponent),
            ("a/../../x", NameError::DotComponent),
            ("a/./b", NameError::DotComponent),
            ("a/..", NameError::DotComponent),
            ("/etc/passwd", NameError::Absolute),
            ("/", NameError::Absolute),
            ("a\\b", NameError::Backslash),
            ("..\\x", NameError::Backslash),
            ("C:\\x", NameError::Backslash),
            ("a\0b", NameError::Control),
            ("a\nb", NameError::Control),
            ("\x1b[2Jx", NameError::Control),
            ("a//b", NameError::EmptyComponent),
            ("a/", NameError::EmptyComponent),
            (&long_component, NameError::ComponentTooLong { len: 256 }),
            (
                &long_name,
                NameError::TooLong {
                    len: long_name.len(),
                },
            ),
            (".x.0123456789abcdef.ltx-part", NameError::Reserved),
            ("d/x.ltx-part", NameError::Reserved),
            (".x.0123456789abcdef.ltx-part/y", NameError::Reserved),
        ];
        for (name, expected) in cases {
            assert_eq!(
                TransferName::parse(name).as_ref(),
                Err(expected),
                "name {name:?}"
            );
        }
    }

    #[test]
    fn ordinary_names_are_accepted() {
        let longest_component = "é".repeat(MAX_COMPONENT_LEN / 2);
        for name in [
            "x",
            ".hidden",
            "..x",
            "x..",
            "a b",
            "rapport été.pdf",
            "dir/sub/file.bin",
            "x.ltx-part.txt",
            &longest_component,
        ] {
            let parsed = TransferName::parse(name).unwrap();
            assert_eq!(parsed.as_str(), name);
        }
    }

    /// The limits are inclusive: a component of exactly 255 bytes and a name
    /// of exactly 1024 bytes pass, one byte more does not.
    #[test]
    fn limits_are_inclusive() {
        let component = "a".repeat(MAX_COMPONENT_LEN);
        assert!(TransferName::parse(&component).is_ok());
        assert!(TransferName::parse(&format!("{component}a")).is_err());

        let mut name = ["b"; MAX_NAME_LEN / 2].join("/");
        name.push('/');
        assert_eq!(name.len(), MAX_NAME_LEN);
        assert_eq!(
            TransferName::parse(&name),
            Err(NameError::EmptyComponent),
            "only the trailing separator is wrong"
        );
        name.pop();
        name.push_str("bb");
        assert_eq!(name.len(), MAX_NAME_LEN + 1);
        assert!(matches!(
            TransferName::parse(&name),
            Err(NameError::TooLong { .. })
        ));
        name.pop();
        assert!(TransferName::parse(&name).is_ok());
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused() {
        assert_eq!(TransferName::from_bytes(b"a\xffb"), Err(NameError::NotUtf8));
        assert_eq!(
            TransferName::from_bytes(&[b'a'; MAX_NAME_LEN + 1]),
            Err(NameError::TooLong {
                len: MAX_NAME_LEN + 1
            })
        );
    }

    /// A link's target stays inside when it never climbs above the top,
    /// counted from the link's own directory; one `..` more leaves.
    #[test]
    fn link_targets_inside_and_outside() {
        let at = |name: &str, target: &str| {
            LinkTarget::parse(target)
                .unwrap()
                .stays_inside(&TransferName::parse(name).unwrap())
        };
        assert!(at("l", "f"));
        assert!(at("l", "./d/../f"));
        assert!(at("a/b/l", "../../f"));
        assert!(!at("a/b/l", "../../../f"));
        assert!(!at("l", "../f"));
        assert!(!at("l", "d/../../f"));
        assert!(!at("a/l", "/etc/passwd"));
        assert_eq!(LinkTarget::parse(""), Err(NameError::Empty));
        assert_eq!(LinkTarget::parse("a\0b"), Err(NameError::Control));
        assert_eq!(LinkTarget::from_bytes(b"\xff"), Err(NameError::NotUtf8));
    }

    #[test]
    fn the_path_is_always_under_the_directory() {
        let name = TransferName::parse("d/e/f.txt").unwrap();
        assert_eq!(name.file_name(), "f.txt");
        assert_eq!(
            name.under(Path::new("/srv/in")),
            Path::new("/srv/in/d/e/f.txt")
        );
        let flat = TransferName::parse("f").unwrap();
        assert_eq!(flat.file_name(), "f");
    }
}
