//! [`Holder`]: who holds shards of a job, as the other processes see it.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

/// A process holding shards: `<host>:<pid>`, with the node's name in
/// front for a cluster node (`crawler_1@box:4242`). Kept in the store as
/// this text; any text reads back (a name is what comes before an `@`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Holder {
    name: Option<String>,
    process: String,
}

impl Holder {
    /// This process: its host name and process id.
    pub fn this_process() -> Self {
        Self {
            name: None,
            process: crate::postgres::this_process(),
        }
    }

    /// This process as the node called `name`.
    pub fn node(name: &str) -> Self {
        Self {
            name: Some(name.to_owned()),
            ..Self::this_process()
        }
    }

    /// The node's name, for a cluster node.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name}@{}", self.process),
            None => f.write_str(&self.process),
        }
    }
}

impl FromStr for Holder {
    type Err = Infallible;

    /// Reads what [`Holder`]'s `Display` wrote (or any other text: a
    /// holder of an older version, a test's own name).
    fn from_str(s: &str) -> Result<Self, Infallible> {
        Ok(match s.split_once('@') {
            Some((name, process)) if !name.is_empty() => Self {
                name: Some(name.to_owned()),
                process: process.to_owned(),
            },
            _ => Self {
                name: None,
                process: s.to_owned(),
            },
        })
    }
}

impl From<&str> for Holder {
    fn from(s: &str) -> Self {
        let Ok(h) = s.parse();
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_reads_back_what_it_wrote() {
        let node = Holder::node("crawler_1");
        let text = node.to_string();
        assert!(text.starts_with("crawler_1@"), "{text}");
        assert!(
            text.ends_with(&format!(":{}", std::process::id())),
            "{text}"
        );
        assert_eq!(Holder::from(text.as_str()), node);
        let plain = Holder::this_process();
        assert_eq!(plain.name(), None);
        assert_eq!(Holder::from(plain.to_string().as_str()), plain);
        assert_eq!(Holder::from("zero").to_string(), "zero");
        assert_eq!(Holder::from("@x").name(), None);
    }
}
