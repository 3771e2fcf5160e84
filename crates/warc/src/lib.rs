//! WARC 1.1 for crawlkeeper: records (`warcinfo`, `request`, `response`,
//! `metadata`, `revisit`), their digests, files written one gzip member
//! per record with rotation, and reading a file back to find where its
//! last whole record ends (after a crash).
//!
//! Nothing here does I/O on the network or knows the crawl engine: the
//! engine hands over what it sent and received ([`HttpExchange`]) and gets
//! records back; a [`WarcWriter`] appends them to files.
//!
//! | module | what it does |
//! |---|---|
//! | [`digest`] | `sha1:` digests in base32, as WARC writers spell them |
//! | [`gzip`] | gzip members from one deflate state per thread |
//! | [`record`] | a record: its type, named fields and block; serialised |
//! | [`http`] | the records of an HTTP exchange and of a page's metadata |
//! | [`writer`] | files: gzip members, rotation, a `warcinfo` at the head of each |
//! | [`cdxj`] | CDXJ indexes of WARC files, as pywb reads them |
//! | [`scan`] | reading records back; the end of the last whole one |
//! | [`target`] | what may be done to an output path: regular files only, no link followed |

// Library code never panics on a value it could not get, and never
// prints: it returns errors and logs with `tracing` (tests may do both).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)
)]

pub mod cdxj;
pub mod digest;
pub mod gzip;
pub mod http;
pub mod record;
pub mod scan;
pub mod target;
pub mod writer;

pub use http::{HttpExchange, PageMetadata};
pub use record::{Record, RecordType};
pub use scan::{ScanError, Scanned, scan_file};
pub use writer::{WarcWriter, WriterConfig};
