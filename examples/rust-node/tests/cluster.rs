//! `shop-node` as a cluster node: a real ZooKeeper and PostgreSQL (the
//! ones `scripts/test.sh` starts), the binary run as `node`, `submit` and
//! `results`, its own extractor's field in every product page's record.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crawlkeeper_testsite::site::{PRODUCTS, product};
use crawlkeeper_testsite::{SiteConfig, TestSite};
use tokio::process::Command;

fn zookeeper() -> String {
    std::env::var("CRAWLKEEPER_TEST_ZOOKEEPER")
        .expect("CRAWLKEEPER_TEST_ZOOKEEPER names a ZooKeeper (scripts/test.sh starts one)")
}

/// A database of this test's own on the test PostgreSQL server.
async fn database(name: &str) -> String {
    let base = std::env::var("CRAWLKEEPER_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (server, _) = base.rsplit_once('/').expect("a database URL");
    let admin = format!("{server}/postgres");
    let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    let create = format!("CREATE DATABASE {name}");
    tokio::task::spawn_blocking(move || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("PostgreSQL is required ({admin}): {e}"));
        // One statement each: a batch is one transaction, which these refuse.
        c.batch_execute(&drop).unwrap();
        c.batch_execute(&create).unwrap();
    })
    .await
    .unwrap();
    format!("{server}/{name}")
}

fn shop_node(dir: &PathBuf, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shop-node"));
    c.args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    c
}

async fn run(dir: &PathBuf, args: &[&str]) -> (i32, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(120), shop_node(dir, args).output())
        .await
        .expect("the command ends within 2 minutes")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_of_your_own_crawls_with_its_own_extractor() {
    let zk = zookeeper();
    let name = format!("example_node_{}", std::process::id());
    let store = database(&name).await;
    let dir = std::env::temp_dir().join(&name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let site = TestSite::start(SiteConfig::showcase()).await.unwrap();
    let place = ["--zookeeper", &zk, "--store", &store, "--group", &name];

    let log = std::fs::File::create(dir.join("node.log")).unwrap();
    let mut node_args = vec!["node", "--name", "crawler_1", "--formation-timeout", "1s"];
    node_args.extend(place);
    let _node = shop_node(&dir, &node_args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();

    let urls: Vec<String> = (1..=PRODUCTS)
        .map(|n| site.url(0, &format!("/product/{n}")))
        .collect();
    let mut submit = vec!["submit", "--extractor", "shop", "--wait"];
    submit.extend(place);
    submit.extend(urls.iter().map(String::as_str));
    // The node may still be forming its group: submit again until it has.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (code, _, err) = run(&dir, &submit).await;
        if code == 0 {
            break;
        }
        assert!(
            err.contains("start its nodes first") && tokio::time::Instant::now() < deadline,
            "submit: {err}\nnode: {}",
            std::fs::read_to_string(dir.join("node.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (code, jsonl, err) = run(&dir, &["results", "--store", &store]).await;
    assert_eq!(code, 0, "{err}");
    let records: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), urls.len(), "{jsonl}");
    for (n, url) in (1..=PRODUCTS).zip(&urls) {
        let r = records
            .iter()
            .find(|r| r["url"] == url.as_str())
            .unwrap_or_else(|| panic!("no record of {url}"));
        let price: f64 = product(n).price.parse().unwrap();
        assert_eq!(
            r["fields"]["price_cents"],
            serde_json::json!((price * 100.0).round() as u64),
            "{r}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
