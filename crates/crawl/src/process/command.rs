//! `--processor NAME=COMMAND`: which command a processor name runs here,
//! split into words like a shell splits them (quotes and backslashes), and
//! run without a shell.

use std::fmt;
use std::str::FromStr;

/// A processor as an operator configured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessorCommand {
    /// The name jobs use (`--use NAME`).
    pub name: String,
    /// The program and its arguments.
    pub argv: Vec<String>,
}

/// Why a `--processor` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// No `=` between the name and the command.
    #[error("'{0}': expected NAME=COMMAND")]
    NoName(String),
    /// The name has characters other than letters, digits, `_`, `-`, `.`.
    #[error("'{0}': a processor name is letters, digits, '_', '-' and '.'")]
    BadName(String),
    /// Nothing to run.
    #[error("'{0}': the command is empty")]
    Empty(String),
    /// A quote was not closed.
    #[error("'{0}': a quote is not closed")]
    Unclosed(String),
}

use crate::name::valid_name;

impl FromStr for ProcessorCommand {
    type Err = CommandError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, command) = s
            .split_once('=')
            .ok_or_else(|| CommandError::NoName(s.to_owned()))?;
        let name = name.trim();
        if !valid_name(name) {
            return Err(CommandError::BadName(s.to_owned()));
        }
        let argv = split_words(command).ok_or_else(|| CommandError::Unclosed(s.to_owned()))?;
        if argv.is_empty() {
            return Err(CommandError::Empty(s.to_owned()));
        }
        Ok(Self {
            name: name.to_owned(),
            argv,
        })
    }
}

impl fmt::Display for ProcessorCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.argv.join(" "))
    }
}

/// Splits `s` into words as a POSIX shell would, for quotes and
/// backslashes only (no variables, globs or operators); `None` when a
/// quote is left open.
fn split_words(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell_splits_words() {
        let p: ProcessorCommand = "products=python3 /opt/crawl/products.py".parse().unwrap();
        assert_eq!(p.name, "products");
        assert_eq!(p.argv, ["python3", "/opt/crawl/products.py"]);
        let p: ProcessorCommand = r#"x=python3 'my dir/p.py' "a \"b\"" c\ d ''"#.parse().unwrap();
        assert_eq!(p.argv, ["python3", "my dir/p.py", "a \"b\"", "c d", ""]);
    }

    #[test]
    fn bad_commands_are_refused_naming_the_value() {
        for (bad, says) in [
            ("python3 p.py", "expected NAME=COMMAND"),
            ("a b=python3", "a processor name is"),
            ("x=", "the command is empty"),
            ("x=  ", "the command is empty"),
            ("x=python3 'p.py", "a quote is not closed"),
        ] {
            let e = bad.parse::<ProcessorCommand>().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
    }
}
