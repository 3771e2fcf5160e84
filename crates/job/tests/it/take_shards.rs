//! A running crawl takes the shard of a holder that is gone, resuming what
//! it left (what a cluster Runner does for a dead one), on a real
//! PostgreSQL database of the test's own and the test site.

use std::time::Duration;

use crawlkeeper_crawl::state::Sharing;
use crawlkeeper_crawl::{Control, CrawlConfig, Engine, MemorySink, Registry, StopReason};
use crawlkeeper_job::{StoreState, job_spec};
use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FrontierEntry, Partition, shard_of};
use crawlkeeper_store::{Claim, PgStore, Store};
use crawlkeeper_testsite::{SiteConfig, TestSite};
use url::Url;

fn server_url(db: &str) -> String {
    let base = std::env::var("CRAWLKEEPER_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{db}")
}

fn admin(sql: &str) {
    let url = server_url("postgres");
    let mut c = postgres::Client::connect(&url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("PostgreSQL is required ({url}): {e}; run scripts/test.sh"));
    c.batch_execute(sql).unwrap();
}

fn claim(shards: &[u32], holder: &str) -> Claim {
    Claim {
        shards: shards.to_vec(),
        holder: holder.into(),
        take_over: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_crawl_takes_a_gone_holders_shard_and_crawls_what_it_left() {
    let site = TestSite::start(SiteConfig::uniform(4, 8)).await.unwrap();
    let host = |i: usize| {
        Url::parse(site.origin(i))
            .unwrap()
            .host_str()
            .unwrap()
            .to_owned()
    };
    let mine = (0..4)
        .find(|&i| shard_of(&host(i), 2) == 0)
        .expect("a host of shard 0");
    let theirs = (0..4)
        .find(|&i| shard_of(&host(i), 2) == 1)
        .expect("a host of shard 1");
    let db = format!("ck_take_{}", std::process::id());
    tokio::task::spawn_blocking({
        let db = db.clone();
        move || {
            admin(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
            admin(&format!("CREATE DATABASE {db}"));
        }
    })
    .await
    .unwrap();
    let url = server_url(&db);
    let seeds: Vec<Url> = [mine, theirs]
        .iter()
        .map(|&i| Url::parse(&site.url(i, "/")).unwrap())
        .collect();
    let mut config = CrawlConfig::default();
    config.scope.follow = true;
    config.politeness.max_load = 100;
    let spec = job_spec(&config, &seeds, 2);
    let (store, job) = tokio::task::spawn_blocking({
        let (url, theirs_seed) = (url.clone(), seeds[1].clone());
        move || {
            // Shard 1's holder admitted its seed, loaded it and died.
            let mut gone = PgStore::connect(&url).unwrap();
            let job = gone.open_job(&spec).unwrap();
            gone.claim(&job, &claim(&[1], "gone")).unwrap();
            let entry = FrontierEntry {
                key: crawlkeeper_model::key::key_of_url(&theirs_seed),
                url: theirs_seed.to_string(),
                depth: 0,
                parent: None,
                redirect_chain: Vec::new(),
                known: None,
            };
            let mut batch = Batch {
                admit: vec![(entry, Authority::of(&theirs_seed).unwrap(), true)],
                ..Batch::default()
            };
            gone.apply(job.id, &mut batch).unwrap();
            drop(gone);
            let mut store: Box<dyn Store> = Box::new(PgStore::connect(&url).unwrap());
            store.claim(&job, &claim(&[0], "me")).unwrap();
            (store, job)
        }
    })
    .await
    .unwrap();
    let sharing = Sharing::new(Partition::new(2, vec![0]).unwrap());
    let state = StoreState::shared(store, job, sharing, None).unwrap();
    let sink = MemorySink::new();
    let records = sink.records();
    let mut engine = Engine::configure(config, seeds, &Registry::builtin()).unwrap();
    let control = engine.controls();
    control.send(Control::TakeShards(vec![1])).unwrap();
    let engine = engine.attach(Box::new(state), Box::new(sink));
    let summary =
        tokio::time::timeout(Duration::from_secs(120), engine.run(std::future::pending()))
            .await
            .expect("the crawl ends")
            .unwrap();
    assert_eq!(summary.stop, StopReason::Finished);
    let urls: std::collections::BTreeSet<String> = records
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.url.clone())
        .collect();
    for i in [mine, theirs] {
        for path in std::iter::once("/".to_owned()).chain((0..8).map(|p| format!("/p/{p}"))) {
            assert!(
                urls.contains(&site.url(i, &path)),
                "{} not crawled: {urls:?}",
                site.url(i, &path)
            );
        }
    }
    assert_eq!(urls.len(), records.lock().unwrap().len(), "each URL once");
    tokio::task::spawn_blocking(move || {
        admin(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
    })
    .await
    .unwrap();
}
