//! The HTTP client stacks on loopback: what the crawler's fetcher costs
//! per request over hyper-util's client alone, and what reqwest (the
//! crawler's client before #31) cost. Each stack fetches the same pages of
//! the test site with the same concurrency and reads every body; the
//! benchmark's own CPU (user + system, the site is another process) per
//! request is reported. None follows redirects: the crawler does that
//! itself.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Empty};

use crate::proc::{binaries_dir, own_cpu, read_origins, stop};

/// Options of `crawlkeeper-bench client`.
#[derive(Args, Debug)]
pub struct ClientArgs {
    /// Pages fetched by each stack in each run.
    #[arg(long, default_value_t = 40_000)]
    pages: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Runs of each stack, alternated (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Approximate size of each page in bytes.
    #[arg(long, default_value_t = 4096)]
    page_bytes: usize,
}

/// A client stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stack {
    /// reqwest, built as the crawler built it before #31 (no redirects,
    /// no proxy, no decompression).
    Reqwest,
    /// The crawler's own fetcher (`HttpFetcher`, default settings): the
    /// SSRF guard, the request's headers, the body read and decoded.
    Fetcher,
    /// hyper-util's pooled client over its `HttpConnector`.
    HyperUtil,
}

impl Stack {
    fn name(self) -> &'static str {
        match self {
            Stack::Reqwest => "reqwest",
            Stack::Fetcher => "fetcher",
            Stack::HyperUtil => "hyper-util",
        }
    }
}

/// hyper-util's pooled client over plain HTTP, with empty request bodies.
type HyperClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Empty<Bytes>,
>;

/// Runs the client benchmark.
pub fn run(args: ClientArgs) -> Result<()> {
    if args.pages == 0 || args.concurrency == 0 || args.runs == 0 {
        bail!("--pages, --concurrency and --runs must be at least 1");
    }
    let dir = binaries_dir()?;
    let mut site = Command::new(dir.join("crawlkeeper-testsite"))
        .args(["--hosts", "1", "--pages", &args.pages.to_string()])
        .args(["--links", "20", "--delay-ms", "0"])
        .args(["--page-bytes", &args.page_bytes.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the test site")?;
    let origin = read_origins(&mut site)?
        .into_iter()
        .next()
        .context("the test site printed no origin")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let stacks = [Stack::Reqwest, Stack::Fetcher, Stack::HyperUtil];
    let mut cpu: Vec<Vec<Duration>> = vec![Vec::new(); stacks.len()];
    let result = (|| {
        for _ in 0..args.runs {
            for (k, stack) in stacks.iter().enumerate() {
                let before = own_cpu();
                let started = Instant::now();
                runtime.block_on(fetch_all(*stack, &origin, &args))?;
                let used = own_cpu().saturating_sub(before);
                println!(
                    "  {:<10} {} requests in {:.2} s, CPU {:.3} s",
                    stack.name(),
                    args.pages,
                    started.elapsed().as_secs_f64(),
                    used.as_secs_f64()
                );
                cpu[k].push(used);
            }
        }
        Ok::<_, anyhow::Error>(())
    })();
    stop(site);
    result?;
    println!(
        "\nclient: {} pages of ~{} bytes on loopback, {} in flight, median of {} runs (alternated)",
        args.pages, args.page_bytes, args.concurrency, args.runs
    );
    let per_request = |runs: &mut Vec<Duration>| {
        runs.sort();
        runs[runs.len() / 2].as_secs_f64() * 1e6 / args.pages as f64
    };
    let reqwest = per_request(&mut cpu[0]);
    let fetcher = per_request(&mut cpu[1]);
    let base = per_request(&mut cpu[2]);
    println!("| stack | CPU per request |\n|---|---:|");
    println!("| reqwest (before #31) | {reqwest:.1} µs |");
    println!("| crawlkeeper's fetcher | {fetcher:.1} µs |");
    println!("| hyper-util alone | {base:.1} µs |");
    println!(
        "over hyper-util alone: reqwest {:.1} µs, the fetcher {:.1} µs per request",
        reqwest - base,
        fetcher - base
    );
    Ok(())
}

/// Fetches pages `/p/0` … of `origin` with `stack`, reading every body.
async fn fetch_all(stack: Stack, origin: &str, args: &ClientArgs) -> Result<()> {
    match stack {
        Stack::Reqwest => {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .tcp_nodelay(true)
                .build()?;
            run_workers(
                client,
                origin,
                args,
                |client: reqwest::Client, url| async move {
                    let mut response = client.get(url).send().await?;
                    let mut bytes = 0;
                    while let Some(chunk) = response.chunk().await? {
                        bytes += chunk.len();
                    }
                    Ok((response.status().as_u16(), bytes))
                },
            )
            .await
        }
        Stack::Fetcher => {
            use crawlkeeper_crawl::Fetcher as _;
            let seed = url::Url::parse(origin)?;
            let config = crawlkeeper_crawl::config::FetchConfig::default();
            let fetcher = Arc::new(crawlkeeper_crawl::HttpFetcher::new(&config, &[seed])?);
            run_workers(
                fetcher,
                origin,
                args,
                |fetcher: Arc<crawlkeeper_crawl::HttpFetcher>, url| async move {
                    let response = fetcher.fetch(&url).await?;
                    Ok((response.status, response.body.len()))
                },
            )
            .await
        }
        Stack::HyperUtil => {
            let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
            http.set_nodelay(true);
            let client: HyperClient =
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build(http);
            run_workers(
                client,
                origin,
                args,
                |client: HyperClient, url| async move {
                    let request = hyper::Request::get(url.as_str()).body(Empty::new())?;
                    let mut response = client.request(request).await?;
                    let mut bytes = 0;
                    while let Some(frame) = response.body_mut().frame().await {
                        if let Ok(data) = frame?.into_data() {
                            bytes += data.len();
                        }
                    }
                    Ok((response.status().as_u16(), bytes))
                },
            )
            .await
        }
    }
}

/// `--concurrency` tasks, each taking the next page and fetching it with
/// `fetch` (which answers the status and the body's length) until every
/// page is fetched.
async fn run_workers<C, F, Fut>(client: C, origin: &str, args: &ClientArgs, fetch: F) -> Result<()>
where
    C: Clone + Send + 'static,
    F: Fn(C, url::Url) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(u16, usize)>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..args.concurrency {
        let (client, next, origin, n, fetch) = (
            client.clone(),
            next.clone(),
            origin.to_owned(),
            args.pages,
            fetch.clone(),
        );
        tasks.spawn(async move {
            while let Some(i) = take(&next, n) {
                let url = url::Url::parse(&format!("{origin}/p/{i}"))?;
                let (status, bytes) = fetch(client.clone(), url).await?;
                check(status, bytes)?;
            }
            Ok::<_, anyhow::Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// The next page number, until `n`.
fn take(next: &AtomicUsize, n: usize) -> Option<usize> {
    let i = next.fetch_add(1, Ordering::Relaxed);
    (i < n).then_some(i)
}

/// A page must be a 200 with a body.
fn check(status: u16, bytes: usize) -> Result<()> {
    if status != 200 || bytes == 0 {
        bail!("the test site answered {status} with {bytes} bytes");
    }
    Ok(())
}
