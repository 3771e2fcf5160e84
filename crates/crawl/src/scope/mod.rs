//! The third stage of the pipeline: deciding which discovered URLs are
//! worth a request. Each rule is a small [`Scoper`]; the chain runs them in
//! the configured order and stops at the first refusal.

mod rules;

use std::fmt;

use url::Url;

pub use rules::{
    DepthScoper, HostScoper, PatternError, PatternScoper, SchemeScoper, UrlLengthScoper,
};

/// One scope rule.
pub trait Scoper: Send + Sync {
    /// The name this scoper is configured by.
    fn name(&self) -> &str;

    /// Accepts or refuses one candidate.
    fn check(&self, candidate: &Candidate<'_>) -> Verdict;
}

/// A discovered URL on its way to the frontier.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The URL, resolved and normalised.
    pub url: &'a Url,
    /// Its depth: the linking page's depth + 1, or the same for a redirect.
    pub depth: u32,
}

/// A scoper's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The URL passes this rule.
    Accept,
    /// The URL is out of scope, and why.
    Reject(ScopeReason),
}

/// Why a URL is out of scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScopeReason {
    /// Not http or https.
    Scheme,
    /// Longer than the maximum URL length.
    UrlLength,
    /// A host outside the configured host scope.
    Host,
    /// Deeper than the maximum depth.
    Depth,
    /// Matches no `include` pattern, or an `exclude` pattern.
    Pattern,
    /// A scoper added by a library user refused it.
    Custom(&'static str),
}

impl fmt::Display for ScopeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Scheme => "scheme",
            Self::UrlLength => "url-length",
            Self::Host => "host",
            Self::Depth => "depth",
            Self::Pattern => "pattern",
            Self::Custom(name) => name,
        })
    }
}

/// What became of a discovered URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// New and in scope: queued for a request.
    Queued,
    /// Already seen in this crawl.
    Duplicate,
    /// Refused by a scoper.
    OutOfScope(ScopeReason),
    /// In scope but over `max_pages`.
    OverLimit,
    /// Its authority was abandoned; it gets a skipped record.
    Skipped,
}

/// The scopers of a crawl, in order.
#[derive(Default)]
pub struct ScopeChain {
    scopers: Vec<Box<dyn Scoper>>,
}

impl ScopeChain {
    /// A chain of `scopers`, run in order.
    pub fn new(scopers: Vec<Box<dyn Scoper>>) -> Self {
        Self { scopers }
    }

    /// The first refusal, or `Accept`.
    pub fn check(&self, candidate: &Candidate<'_>) -> Verdict {
        for s in &self.scopers {
            if let Verdict::Reject(why) = s.check(candidate) {
                return Verdict::Reject(why);
            }
        }
        Verdict::Accept
    }

    /// The names of the scopers, in order.
    pub fn names(&self) -> Vec<&str> {
        self.scopers.iter().map(|s| s.name()).collect()
    }
}
