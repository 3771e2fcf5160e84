//! Node names as the seed writes and parses them: `<base><sep><index>`,
//! e.g. `sc-crawler_1` or `crawler-3`, where the separator is `-` or `_`
//! and the index is an integer. Election orders nodes by index.

use std::fmt;
use std::str::FromStr;

/// Why a node name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// No `-` or `_` followed by an integer at the end.
    #[error(
        "invalid node name {0:?}: expected <name><separator><index> with '-' or '_' as separator and an integer index, e.g. crawler-1 or crawler_1"
    )]
    NoIndex(String),
    /// The base before the separator is empty.
    #[error("invalid node name {0:?}: the part before the index is empty")]
    EmptyBase(String),
    /// Not a name at all ([`name_problem`]): empty, too long, `.`/`..`, or
    /// a character that cannot be part of a coordinator path.
    #[error("invalid node name {0:?}: {1}")]
    Bad(String, &'static str),
}

/// The most bytes a group's or a node's name may have.
pub const MAX_NAME_BYTES: usize = 64;

/// Why `s` cannot name a group or a node, or `None` when it can. The one
/// rule for names that become a segment of a coordinator path: 1 to
/// [`MAX_NAME_BYTES`] bytes of `[A-Za-z0-9._-]`, and not `.` or `..`.
pub fn name_problem(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        Some("a name cannot be empty")
    } else if s.len() > MAX_NAME_BYTES {
        Some("a name has at most 64 bytes")
    } else if s == "." || s == ".." {
        Some("a name cannot be '.' or '..'")
    } else if !s
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        Some("only letters, digits, '-', '_' and '.' are allowed")
    } else {
        None
    }
}

/// A node's name: a base, a separator (`-` or `_`) and an index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeName {
    base: String,
    separator: char,
    index: u32,
}

impl NodeName {
    /// Builds a name from its parts.
    pub fn new(base: &str, separator: char, index: u32) -> Result<Self, NameError> {
        format!("{base}{separator}{index}").parse()
    }

    /// The part before the separator.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `-` or `_`.
    pub fn separator(&self) -> char {
        self.separator
    }

    /// The integer after the separator; election orders nodes by it.
    pub fn index(&self) -> u32 {
        self.index
    }
}

impl FromStr for NodeName {
    type Err = NameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(why) = name_problem(s) {
            return Err(NameError::Bad(s.to_owned(), why));
        }
        let sep_at = s
            .rfind(['-', '_'])
            .ok_or_else(|| NameError::NoIndex(s.to_owned()))?;
        let digits = &s[sep_at + 1..];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NameError::NoIndex(s.to_owned()));
        }
        let index = digits
            .parse()
            .map_err(|_| NameError::NoIndex(s.to_owned()))?;
        let base = &s[..sep_at];
        if base.is_empty() {
            return Err(NameError::EmptyBase(s.to_owned()));
        }
        Ok(NodeName {
            base: base.to_owned(),
            separator: s.as_bytes()[sep_at] as char,
            index,
        })
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.base, self.separator, self.index)
    }
}

impl serde::Serialize for NodeName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for NodeName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_separators_and_keeps_separators_in_the_base() {
        let n: NodeName = "sc-crawler_1".parse().unwrap();
        assert_eq!((n.base(), n.separator(), n.index()), ("sc-crawler", '_', 1));
        let n: NodeName = "spider-12".parse().unwrap();
        assert_eq!((n.base(), n.separator(), n.index()), ("spider", '-', 12));
        assert_eq!(n.to_string(), "spider-12");
        assert_eq!(
            NodeName::new("crawler", '_', 3).unwrap().to_string(),
            "crawler_3"
        );
    }

    #[test]
    fn a_name_without_an_integer_index_is_refused() {
        for bad in [
            "crawler",
            "crawler-",
            "crawler_x",
            "crawler-1a",
            "crawler-1.5",
            "-3",
            "a/b-1",
            "",
        ] {
            let err = bad.parse::<NodeName>().unwrap_err();
            assert!(
                err.to_string().contains("invalid node name"),
                "{bad}: {err}"
            );
        }
        assert!(matches!(
            "crawler".parse::<NodeName>(),
            Err(NameError::NoIndex(_))
        ));
        for bad in ["a/b-1", "", "x\n-1", "../x-1", "ü-1"] {
            assert!(
                matches!(bad.parse::<NodeName>(), Err(NameError::Bad(..))),
                "{bad:?}"
            );
        }
        let long = format!("{}-1", "a".repeat(MAX_NAME_BYTES - 1));
        assert!(matches!(long.parse::<NodeName>(), Err(NameError::Bad(..))));
        assert!(long[1..].parse::<NodeName>().is_ok(), "64 bytes is fine");
        assert!(matches!(
            "_7".parse::<NodeName>(),
            Err(NameError::EmptyBase(_))
        ));
        assert!(matches!(
            "crawler-99999999999".parse::<NodeName>(),
            Err(NameError::NoIndex(_))
        ));
    }

    #[test]
    fn the_name_rule() {
        for ok in ["a", "sc-crawler-cluster", "a.b_c-1", "...", &"x".repeat(64)] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "a\0", &"x".repeat(65)] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn names_order_by_index_within_a_base() {
        let mut v: Vec<NodeName> = ["c_10", "c_2", "c_1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        v.sort_by_key(NodeName::index);
        assert_eq!(
            v.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["c_1", "c_2", "c_10"]
        );
    }
}
