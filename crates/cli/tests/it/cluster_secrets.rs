//! Secrets in a cluster (#30): `submit --header --cookies --proxy` to two
//! real Runners on ZooKeeper and PostgreSQL. Every request reaches the
//! sites through the proxy (tinyproxy, asking for a password) with the
//! header and the cookie file's cookie for its host; a cookie a site sets
//! goes back to that host only; a seed's own password goes to its host
//! only (#51); and no secret shows in `submit`'s or `status --json`'s
//! output, the nodes' logs (at debug level), a node's metrics and status
//! API, `results`, or any node of the group in ZooKeeper.

use crate::common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::cluster::Cluster;
use common::http::{free_addr, wait_for};
use common::tinyproxy::Tinyproxy;
use crawlkeeper_testsite::hostile::{HostileServer, Script};

const HEADER_SECRET: &str = "Hdr-S3cret-91c4";
const PROXY_SECRET: &str = "Prx-S3cret-5d0e";
/// The cookie file's cookie for each host.
const COOKIE_SECRETS: [&str; 2] = ["Ck0-S3cret-a1f7", "Ck1-S3cret-b2e8"];
/// The password in the first host's seed URL.
const SEED_SECRET: &str = "Sd-S3cret-77aa";

/// Every secret of the job.
fn secrets() -> [&'static str; 5] {
    [
        HEADER_SECRET,
        PROXY_SECRET,
        COOKIE_SECRETS[0],
        COOKIE_SECRETS[1],
        SEED_SECRET,
    ]
}

/// The value of every node under `path` in ZooKeeper, as text.
async fn zookeeper_tree(zookeeper: &str, path: &str) -> String {
    use crawlkeeper_cluster::Coordinator as _;
    let zk = crawlkeeper_cluster::zk::ZkCoordinator::connect(zookeeper, Duration::from_secs(10))
        .await
        .unwrap();
    let mut text = String::new();
    let mut todo = vec![path.to_owned()];
    while let Some(p) = todo.pop() {
        if let Ok((value, _)) = zk.get(&p).await {
            text.push_str(&format!("{p}: {}\n", String::from_utf8_lossy(&value)));
        }
        for child in zk.children(&p).await.unwrap_or_default() {
            todo.push(format!("{}/{child}", p.trim_end_matches('/')));
        }
    }
    let _ = zk.close().await;
    text
}

/// Fails if `text` (what `what` showed) holds a secret.
fn assert_no_secret(what: &str, text: &str) {
    for secret in secrets() {
        assert!(!text.contains(secret), "{secret} in {what}: {text}");
    }
}

/// Two loopback addresses whose hosts fall in different shards of two:
/// each Runner crawls one.
fn one_per_shard() -> [Ipv4Addr; 2] {
    let candidates: Vec<Ipv4Addr> = (20..80).map(|i| Ipv4Addr::new(127, 0, 0, i)).collect();
    let shard = |ip: &Ipv4Addr| crawlkeeper_model::shard_of(&ip.to_string(), 2);
    let first = candidates[0];
    let second = candidates
        .iter()
        .find(|ip| shard(ip) != shard(&first))
        .expect("an address in the other shard");
    [first, *second]
}

/// Host `i`: its index sets the cookie `visit=host<i>` and links to two
/// pages.
async fn host(ip: Ipv4Addr, i: usize) -> HostileServer {
    let visit = format!("visit=host{i}; Path=/");
    HostileServer::start(
        ip,
        vec![
            (
                "/robots.txt",
                Script::response(200, &[], "User-agent: *\nAllow: /\n"),
            ),
            (
                "/",
                Script::response(
                    200,
                    &[("Content-Type", "text/html"), ("Set-Cookie", &visit)],
                    "<a href=/a>a</a><a href=/b>b</a>",
                ),
            ),
            ("/a", Script::html("<title>a</title>")),
            ("/b", Script::html("<title>b</title>")),
        ],
    )
    .await
    .unwrap()
}

/// The value of the header `name` (any case) in a request head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_job_s_header_cookies_and_proxy_are_used_and_never_shown() {
    let c = Cluster::start("cl_secrets", 2, 0, 2, 1, 1, 0).await;
    let ips = one_per_shard();
    let hosts = [host(ips[0], 0).await, host(ips[1], 1).await];
    let auth = ("crawler", PROXY_SECRET);
    let proxy = Tinyproxy::start(&c.site.dir, Some(auth));
    let cookies = c.site.dir.join("cookies.txt");
    let lines: String = ips
        .iter()
        .zip(COOKIE_SECRETS)
        .map(|(ip, secret)| format!("{ip}\tFALSE\t/\tFALSE\t4102444800\tsession\t{secret}\n"))
        .collect();
    std::fs::write(&cookies, format!("# Netscape HTTP Cookie File\n{lines}")).unwrap();

    // Node 1 serves its metrics and status API; both log at debug level.
    let (metrics, status) = (free_addr(), free_addr());
    let (m, s) = (metrics.to_string(), status.to_string());
    let debug = [("RUST_LOG", "debug")];
    let _first = c.node_logged_with(1, &["--metrics", &m, "--status", &s], &debug);
    let _second = c.node_logged_with(2, &[], &debug);
    c.formed().await;

    let api_key = format!("X-Api-Key: {HEADER_SECRET}");
    let proxy_url = proxy.url(Some(auth));
    let mut seeds: Vec<String> = hosts.iter().map(|h| h.url("/")).collect();
    seeds[0] = seeds[0].replace("http://", &format!("http://crawler:{SEED_SECRET}@"));
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let (code, out, err) = c
        .submit_job(
            &[
                "--follow",
                "--shards",
                "2",
                "--wait",
                "--header",
                &api_key,
                "--cookies",
                cookies.to_str().unwrap(),
                "--proxy",
                &proxy_url,
            ],
            &seeds,
        )
        .await;
    assert_eq!(code, 0, "the job completes: {err}");
    assert_no_secret("submit's output", &format!("{out}{err}"));

    // What each site received: robots.txt, / and its two pages, once
    // each, every one with the header and the file's cookie for its host
    // (not the other's); the cookie / set, on the pages after it only,
    // and never on the other host.
    for (i, site) in hosts.iter().enumerate() {
        let mut targets = site.requests();
        targets.sort();
        assert_eq!(targets, ["/", "/a", "/b", "/robots.txt"], "host {i}");
        for head in site.heads() {
            assert_eq!(header(&head, "x-api-key"), Some(HEADER_SECRET), "{head}");
            let cookie = header(&head, "cookie").unwrap_or_else(|| panic!("{head}"));
            assert!(cookie.contains(COOKIE_SECRETS[i]), "{head}");
            assert!(!cookie.contains(COOKIE_SECRETS[1 - i]), "{head}");
            assert!(!cookie.contains(&format!("host{}", 1 - i)), "{head}");
            let set_before = head.starts_with("GET /a ") || head.starts_with("GET /b ");
            assert_eq!(
                cookie.contains(&format!("visit=host{i}")),
                set_before,
                "{head}"
            );
            // The proxy's credentials are the proxy's: never the site's.
            assert!(!head.contains(PROXY_SECRET), "{head}");
            // The seed's password goes to its host only.
            let basic = "Basic Y3Jhd2xlcjpTZC1TM2NyZXQtNzdhYQ=="; // crawler:Sd-S3cret-77aa
            let want = (i == 0).then_some(basic);
            assert_eq!(header(&head, "authorization"), want, "host {i}: {head}");
        }
    }

    // Through the proxy, every one, from both nodes.
    let through = proxy.requests();
    for site in &hosts {
        for target in ["/robots.txt", "/", "/a", "/b"] {
            let line = format!("GET {} HTTP/1.1", site.url(target));
            assert!(through.contains(&line), "{line} not in {through:#?}");
        }
    }
    assert_eq!(through.len(), 8, "{through:#?}");
    let clients = proxy.clients();
    for i in 1..=2 {
        let node = Cluster::address(i).to_string();
        assert!(
            clients.contains(&node),
            "node {i} not a client: {clients:?}"
        );
    }

    // Shown nowhere.
    let status_json = c.status().await;
    assert_no_secret("status --json", &status_json.to_string());
    let job = status_json["jobs"][0]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{status_json:#}"))
        .to_owned();
    let (code, results, err) = c.run(&["results", "--store", &c.site.url, &job]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(common::records(&results).len(), 6, "{results}");
    assert_no_secret("results", &format!("{results}{err}"));
    let limit = Duration::from_secs(60);
    let text = wait_for(metrics, "/metrics", limit, |t| t.contains("crawlkeeper_")).await;
    assert_no_secret("the metrics", &text);
    let api = wait_for(status, "/api/status", limit, |t| t.contains("crawler_1")).await;
    assert_no_secret("the status API", &api);
    let group = crawlkeeper_cluster::Layout::new(&c.group).unwrap();
    let tree = zookeeper_tree(&c.zookeeper, group.root()).await;
    // The task items name the first seed: without its password.
    assert!(
        tree.contains(&hosts[0].url("/")),
        "the group's nodes: {tree}"
    );
    assert_no_secret("ZooKeeper", &tree);
    for i in 1..=2 {
        let log = c.node_log(i);
        assert!(log.contains("DEBUG"), "node {i} logs at debug level: {log}");
        assert_no_secret(&format!("node {i}'s log"), &log);
    }
}
