//! Sitemap files as a server may send them: XML `urlset`s and indexes,
//! text sitemaps, gzip of either, malformed or crafted
//! (crates/crawl/src/sitemap.rs).
//!
//! Invariants: nothing panics; at most `MAX_URLS` pages and `MAX_URLS`
//! sitemap files are taken, no `loc` is empty or longer than `MAX_LOC`,
//! a `lastmod` is at most 64 characters; and the gzip of a file reads
//! exactly as the file.
#![no_main]

use std::io::Write;

use crawlkeeper_crawl::sitemap::{MAX_LOC, MAX_URLS, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (map, _) = parse(data);
    assert!(map.urls.len() <= MAX_URLS, "{} pages", map.urls.len());
    assert!(map.sitemaps.len() <= MAX_URLS, "{} files", map.sitemaps.len());
    for (loc, lastmod) in &map.urls {
        assert!(!loc.is_empty() && loc.len() <= MAX_LOC, "loc of {} bytes", loc.len());
        assert!(lastmod.as_ref().is_none_or(|l| l.chars().count() <= 64));
    }
    for loc in &map.sitemaps {
        assert!(!loc.is_empty() && loc.len() <= MAX_LOC, "loc of {} bytes", loc.len());
    }
    // The same file gzipped reads the same (unless it is gzip already).
    if !data.starts_with(&[0x1f, 0x8b]) {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).expect("writing to memory");
        let zipped = gz.finish().expect("writing to memory");
        let (again, _) = parse(&zipped);
        assert_eq!(again, map, "gzip changed what was read");
    }
});
