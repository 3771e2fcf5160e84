//! Page requisites in a cluster (issue #28): `submit --requisites
//! --store-bodies` on the test site's requisite pages, two Runners each
//! holding a shard. A requisite on the second host (the CDN) is fetched by
//! that host's holder, once; `results` gives every requisite's record and
//! `results --format warc` a response for each.

use crate::common;

use std::collections::BTreeMap;

use common::cluster::Cluster;
use crawlkeeper_model::Via;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_job_with_requisites_archives_each_once_from_its_host_s_holder() {
    let c = Cluster::start("cl_req", 2, 0, 2, 2, 3, 0).await;
    let _first = c.node(1, &[]);
    let _second = c.node(2, &[]);
    c.formed().await;
    let seed = c.site.site.url(0, "/req/");
    let (code, _, err) = c
        .submit_job(
            &[
                "--follow",
                "--depth",
                "1",
                "--shards",
                "2",
                "--requisites",
                "--store-bodies",
                "--wait",
            ],
            &[&seed],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let job = c.status().await["jobs"][0]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, jsonl, err) = c.run(&["results", "--store", &c.site.url, &job]).await;
    assert_eq!(code, 0, "{err}");
    let records = common::records(&jsonl);
    let mut urls: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &records {
        *urls.entry(r.url.as_str()).or_default() += 1;
    }
    assert!(urls.values().all(|&n| n == 1), "{urls:#?}");
    let requisites: Vec<_> = records
        .iter()
        .filter(|r| r.via == Some(Via::Embed))
        .collect();
    let cdn = c.site.site.url(1, "/");
    assert!(
        requisites.iter().any(|r| r.url.starts_with(&cdn)),
        "a requisite on the second host: {records:#?}"
    );
    assert!(requisites.len() >= 15, "{records:#?}");
    for r in &requisites {
        assert_eq!(r.status, Some(200), "{}", r.url);
        assert!(r.parent.is_some(), "{}", r.url);
    }
    // The WARC from the store: a response for every requisite.
    let warc = c.site.dir.join("req.warc.gz");
    let (code, _, err) = c
        .run(&[
            "results",
            "--store",
            &c.site.url,
            "--format",
            "warc",
            "--out",
            warc.to_str().unwrap(),
            &job,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let archived = common::warc::check_files(&warc);
    let responses = common::warc::by_uri(&archived, "response");
    for r in &requisites {
        let n = responses.get(&r.url).map_or(0, Vec::len);
        assert_eq!(n, 1, "responses for {} in the WARC", r.url);
    }
}
