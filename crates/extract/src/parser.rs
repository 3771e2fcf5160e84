//! One step of lol_html, bounded: the memory a page's parser may hold,
//! and a panic inside it caught as an error (lol_html asserts on some
//! input in debug builds).

use lol_html::errors::RewritingError;

/// The most memory the parser may hold for one page (buffered tags and
/// attributes; the body itself is apart).
pub(super) const MAX_PARSER_MEMORY: usize = 32 * 1024 * 1024;

/// Why the parser stopped before the end of a page.
#[derive(Debug)]
pub(super) enum Stopped {
    /// It returned an error.
    Parser(RewritingError),
    /// It panicked: lol_html 3.0.3 asserts on `<script f=><A </a>` (found
    /// by fuzzing) in builds with debug assertions; in others it errs.
    Panicked,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Parser(e) => e.fmt(f),
            Self::Panicked => f.write_str("the HTML parser panicked"),
        }
    }
}

/// Runs one step of the parser, a panic in it being an error like another.
pub(super) fn guarded(step: impl FnOnce() -> Result<(), RewritingError>) -> Result<(), Stopped> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)) {
        Ok(result) => result.map_err(Stopped::Parser),
        Err(_) => Err(Stopped::Panicked),
    }
}
