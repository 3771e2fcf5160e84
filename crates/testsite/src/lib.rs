//! A deterministic synthetic web site on loopback, for tests, benchmarks
//! and `crawlkeeper demo`. Nothing here reaches beyond loopback (127.0.0.0/8).
//!
//! | module | what it does |
//! |---|---|
//! | [`edition`] | a site that changes between crawls: page revisions, validators, 304s |
//! | [`site`] | the site's shape: hosts, pages, links, special pages; and the oracle of what a crawl must reach |
//! | [`server`] | serving the site with hyper, one listener per host |
//! | [`log`] | the request log tests judge a crawl by |
//! | [`hostile`] | a server that misbehaves on purpose, byte by byte, for the hostile-input tests |
//! | [`tls`] | a throw-away certificate authority, for HTTPS and HTTP/2; certificates a client must refuse (expired, for another name, self-signed) |
//! | [`zookeeper`] | a real ZooKeeper server for the cluster's tests (`scripts/zookeeper.sh`) |
//! | [`requisite`] | the requisite pages under `/req/`: a page needing every kind of requisite, some on the next host (a CDN) |
//! | [`script`] | the script pages under `/js/`: an app shell built by script, fetches in and out of scope, a crash, a hang, late content |
//! | [`relay`] | a TCP relay a test cuts to make a client vanish, as a crashed process does |
//! | [`socks`] | a small SOCKS5 proxy (CONNECT to loopback only) for the proxy tests |
//!
//! Each host is a listener on its own loopback address (127.0.0.1,
//! 127.0.0.2, …: a host and an authority of its own). Host pages `/p/0 … /p/{n-1}` link to each other in every form
//! a crawler meets (absolute, root-relative, relative, `../`, fragments,
//! tracking parameters); a host with `special` pages also serves robots
//! rules, redirects and loops, 404s, non-HTML files, a slow page, a huge
//! page, a compressed page, an endless link trap and the traps a crawler
//! must not fall into (links in scripts, comments, `nofollow`). Every path
//! under `/never/` is one a correct crawler never requests.

pub mod edition;
pub mod hostile;
pub mod log;
pub mod relay;
pub mod requisite;
pub mod script;
pub mod server;
pub mod site;
pub mod socks;
pub mod tls;
pub mod zookeeper;

pub use log::{LogEntry, RequestLog};
pub use server::TestSite;
pub use site::{HostConfig, SiteConfig};
