//! `crawlkeeper-testsite`: serves the synthetic site until killed, printing
//! one origin per host on stdout, then `ready`.

use std::time::Duration;

use clap::Parser;
use crawlkeeper_testsite::TestSite;
use crawlkeeper_testsite::site::{HostConfig, SiteConfig};

/// Serve the synthetic test site on loopback addresses (127.0.0.1, 127.0.0.2, …).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Number of hosts (one port each).
    #[arg(long, default_value_t = 1)]
    hosts: usize,
    /// Pages per host.
    #[arg(long, default_value_t = 1000)]
    pages: u32,
    /// Child links per page.
    #[arg(long, default_value_t = 20)]
    links: u32,
    /// Approximate page size in bytes.
    #[arg(long, default_value_t = 4096)]
    page_bytes: usize,
    /// Delay before each response, in milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Every page uses the requisite pages' shared stylesheet, logo and
    /// icon (for `crawl --requisites`).
    #[arg(long)]
    embeds: bool,
    /// Serve the showcase site (special pages) instead of uniform hosts.
    #[arg(long)]
    showcase: bool,
    /// Worker threads of the server's runtime.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Serve HTTPS (HTTP/2 or HTTP/1.1 by ALPN) with a throw-away
    /// certificate authority, its certificate written to `--ca-out`.
    #[arg(long, requires = "ca_out")]
    tls: bool,
    /// Where `--tls` writes the authority's certificate (PEM), before
    /// `ready`: what a client passes as `--ca-cert`.
    #[arg(long, value_name = "FILE", requires = "tls")]
    ca_out: Option<std::path::PathBuf>,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut config = if args.showcase {
            SiteConfig::showcase()
        } else {
            SiteConfig {
                hosts: (0..args.hosts)
                    .map(|_| HostConfig {
                        pages: args.pages,
                        links: args.links,
                        page_bytes: args.page_bytes,
                        delay: Duration::from_millis(args.delay_ms),
                        embeds: args.embeds,
                        ..HostConfig::default()
                    })
                    .collect(),
                slow: Duration::from_secs(30),
                tls: false,
            }
        };
        config.tls = args.tls;
        let site = TestSite::start(config).await?;
        if let (Some(path), Some(pem)) = (&args.ca_out, site.ca_pem()) {
            std::fs::write(path, pem)?;
        }
        for i in 0..site.hosts() {
            println!("{}", site.origin(i));
        }
        println!("ready");
        tokio::signal::ctrl_c().await?;
        if site.ca_pem().is_some() {
            let handshakes: usize = (0..site.hosts()).map(|h| site.log().handshakes(h)).sum();
            let resumed: usize = (0..site.hosts()).map(|h| site.log().resumed(h)).sum();
            eprintln!(
                "{} requests served, {handshakes} TLS handshakes ({resumed} resumed)",
                site.log().len()
            );
        } else {
            eprintln!("{} requests served", site.log().len());
        }
        Ok(())
    })
}
