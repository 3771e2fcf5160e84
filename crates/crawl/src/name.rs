//! What a name a user gives may be: a processor's (`--processor NAME=…`,
//! `--use NAME`), plain enough for a log line, a file of JSON and a
//! command line alike.

/// True when `name` is 1 to 64 letters, digits, `_`, `-` and `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn names_are_short_and_plain() {
        for good in ["products", "a", "p-1.v_2", &"x".repeat(64)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "a b", "a=b", "ü", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
