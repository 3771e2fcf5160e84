//! Text cut to a size, as every cap on what a page or a processor sends
//! needs it.

/// The longest prefix of `s` of at most `max` bytes that ends at a
/// character boundary.
pub fn cut_at(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::cut_at;

    #[test]
    fn a_cut_never_splits_a_character() {
        assert_eq!(cut_at("abc", 5), "abc");
        assert_eq!(cut_at("abc", 2), "ab");
        assert_eq!(cut_at("aé", 2), "a");
        assert_eq!(cut_at("é", 0), "");
        assert_eq!(cut_at("日本", 5), "日");
    }
}
