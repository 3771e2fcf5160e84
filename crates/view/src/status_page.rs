//! The status page: one self-contained HTML file (its style and script
//! inline, nothing fetched from elsewhere) that asks `/api/status` every
//! second and draws what it gets. The JSON it reads:
//!
//! - `title`, `subtitle`: the header; `running`: false once finished;
//! - `crawls`: `[{name, live}]`, each `live` a
//!   [`crawlkeeper_crawl::live::LiveCrawl`]: figures and the host table;
//! - `cluster`: a node's view of its cluster (members with role, heart
//!   and shards, the GroupState lists, each job's shards), or absent;
//!   `cluster_error` when it could not be read.
//!
//! A list may come cut, its true length beside it as `<list>_total`
//! (`crawls_total`, `host_table_total`, `members_total`, `shards_total`,
//! `jobs_total`, …): the page says "and N more".

/// The page.
pub const PAGE: &str = include_str!("page.html");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_fetches_nothing_from_elsewhere() {
        for outside in ["http://", "https://", "//cdn", "src=\"", "<link"] {
            assert!(!PAGE.contains(outside), "the page refers to {outside}");
        }
        assert!(PAGE.contains("/api/status"));
        assert!(PAGE.contains("name=\"viewport\""), "readable on a phone");
    }

    #[test]
    fn the_page_says_how_many_more_a_cut_list_had() {
        for total in [
            "crawls_total",
            "host_table_total",
            "members_total",
            "m.shards_total",
            "j.shards_total",
            "jobs_total",
            "queued_total",
            "warnings_total",
            "k + \"_total\"",
        ] {
            assert!(PAGE.contains(total), "the page reads {total}");
        }
    }
}
