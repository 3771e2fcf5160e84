//! The job opener, the one way `crawl` and a Runner open a job, against a
//! SQLite state file and a PostgreSQL database of the test's own: what it
//! makes, resumes, deletes and refuses, and that a refusal changes nothing.

use std::path::PathBuf;
use std::time::Instant;

use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_crawl::state::{CrawlState, LEASE_BOUND, StateError};
use crawlkeeper_job::opening::{Note, Outputs, Records, Start, Wanted};
use crawlkeeper_job::{JobError, Location, Opening, OutputError, job_spec, open};
use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FrontierEntry, shard_of};
use url::Url;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ck-open-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The job of one seed, `http://<host>/`, in `shards` shards.
fn wanted(host: &str, shards: u32) -> Wanted {
    let config = CrawlConfig::default();
    let seeds = vec![Url::parse(&format!("http://{host}/")).unwrap()];
    Wanted::Spec {
        spec: job_spec(&config, &seeds, shards),
        config: Box::new(config),
        seeds,
    }
}

fn opening(location: Location, wanted: Wanted, start: Start) -> Opening {
    Opening {
        location,
        wanted,
        start,
        shards: vec![0],
        holder: "me".into(),
        take_over: false,
        outputs: Outputs::none(),
        runs: None,
    }
}

/// Admits one URL of `host` through the engine's state.
fn admit(state: &mut dyn CrawlState, host: &str, path: &str) {
    let url = Url::parse(&format!("http://{host}{path}")).unwrap();
    let entry = FrontierEntry {
        key: u128::from(xxhash_rust::xxh3::xxh3_64(url.as_str().as_bytes())),
        url: url.to_string(),
        depth: 1,
        parent: None,
        redirect_chain: Vec::new(),
        known: None,
    };
    let mut batch = Batch {
        admit: vec![(entry, Authority::of(&url).unwrap(), false)],
        ..Batch::default()
    };
    state.apply(&mut batch).unwrap();
}

#[test]
fn a_new_state_file_gets_the_job_and_the_next_open_resumes_it() {
    let d = dir("resume");
    let location = Location::File(d.join("state.db"));
    let mut first = open(&opening(
        location.clone(),
        wanted("a.test", 1),
        Start::Resume,
    ))
    .unwrap();
    assert_eq!(first.notes, []);
    assert_eq!(first.job.counts.seen, 0);
    admit(first.state.as_mut(), "a.test", "/one");
    drop(first);
    let again = open(&opening(
        location.clone(),
        wanted("a.test", 1),
        Start::Resume,
    ))
    .unwrap();
    assert_eq!(
        again.notes,
        [Note::Resuming {
            done: 0,
            pending: 1
        }]
    );
    drop(again);
    let fresh = open(&opening(location, wanted("a.test", 1), Start::Fresh)).unwrap();
    assert_eq!(fresh.notes, [Note::Deleted]);
    assert_eq!(fresh.job.counts.seen, 0);
}

#[test]
fn a_recrawl_of_a_job_never_crawled_is_refused_before_a_state_file_is_made() {
    let d = dir("recrawl");
    let state = d.join("state.db");
    let location = Location::File(state.clone());
    match open(&opening(location, wanted("a.test", 1), Start::Recrawl)) {
        Err(JobError::NoEarlierCrawl { job, place }) => {
            assert_eq!(place, state.display().to_string());
            assert_eq!(job.len(), 12, "{job}");
        }
        other => panic!("expected NoEarlierCrawl, got {other:?}"),
    }
    assert!(!state.exists(), "nothing was made");
}

#[test]
fn a_foreign_output_is_refused_before_anything_is_written() {
    let d = dir("foreign");
    let (state, out) = (d.join("state.db"), d.join("notes.txt"));
    std::fs::write(&out, "my own notes\n").unwrap();
    let mut o = opening(
        Location::File(state.clone()),
        wanted("a.test", 1),
        Start::Resume,
    );
    o.outputs.records = Records::File(out.clone());
    match open(&o) {
        Err(JobError::Output(OutputError::Foreign(why))) => assert!(why.contains("notes.txt")),
        other => panic!("expected a refused output, got {other:?}"),
    }
    assert!(!state.exists());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "my own notes\n");
    // With a job stored, the same: its state is left as it was.
    drop(
        open(&opening(
            Location::File(state.clone()),
            wanted("a.test", 1),
            Start::Fresh,
        ))
        .unwrap(),
    );
    let before = std::fs::read(&state).unwrap();
    o.start = Start::Fresh;
    assert!(matches!(open(&o), Err(JobError::Output(_))));
    assert_eq!(
        std::fs::read(&state).unwrap(),
        before,
        "not even --fresh ran"
    );
}

#[test]
fn a_runner_opens_only_a_stored_job_and_only_its_shards() {
    let d = dir("stored");
    let location = Location::File(d.join("state.db"));
    let o = opening(
        location.clone(),
        Wanted::Stored("nosuchjob".into()),
        Start::Resume,
    );
    assert!(matches!(open(&o), Err(JobError::Missing(name)) if name == "nosuchjob"));
    let made = open(&opening(
        location.clone(),
        wanted("a.test", 1),
        Start::Resume,
    ))
    .unwrap();
    let name = made.job.name.clone();
    drop(made);
    let stored = open(&opening(
        location.clone(),
        Wanted::Stored(name),
        Start::Resume,
    ))
    .unwrap();
    assert_eq!(stored.seeds, [Url::parse("http://a.test/").unwrap()]);
    drop(stored);
    let mut o = opening(location, wanted("a.test", 1), Start::Resume);
    o.shards = vec![3];
    match open(&o) {
        Err(JobError::NoSuchShards { count, shards, .. }) => {
            assert_eq!((count, shards), (1, vec![3]))
        }
        other => panic!("expected NoSuchShards, got {other:?}"),
    }
}

fn postgres(name: &str) -> Location {
    let base = std::env::var("CRAWLKEEPER_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (server, _) = base.rsplit_once('/').unwrap();
    let db = format!("ck_open_{name}_{}", std::process::id());
    let mut c = postgres::Client::connect(&format!("{server}/postgres"), postgres::NoTls)
        .unwrap_or_else(|e| panic!("PostgreSQL is required ({server}): {e}; run scripts/test.sh"));
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .unwrap();
    c.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    Location::Store(format!("{server}/{db}"))
}

/// A host of shard 0 of a two-shard job.
fn host_of_shard_0() -> String {
    (0..)
        .map(|i| format!("h{i}.test"))
        .find(|h| shard_of(h, 2) == 0)
        .unwrap()
}

#[test]
fn a_live_holder_is_refused_and_taken_over_once_its_lease_gate_is_shut() {
    let location = postgres("live");
    let host = host_of_shard_0();
    let mut first = open(&opening(location.clone(), wanted(&host, 2), Start::Resume)).unwrap();
    assert!(first.displaced.is_empty());
    assert_eq!(
        first.notes,
        [Note::Crawling {
            shards: vec![0],
            of: 2,
            holder: "me".into()
        }]
    );
    let mut second = opening(location.clone(), wanted(&host, 2), Start::Resume);
    second.holder = "second".into();
    match open(&second) {
        Err(JobError::Held { shard, holder, .. }) => {
            assert_eq!((shard, holder.as_str()), (0, "me"))
        }
        other => panic!("expected Held, got {other:?}"),
    }
    second.take_over = true;
    let asked = Instant::now();
    let heir = open(&second).unwrap();
    assert_eq!(heir.displaced, [0], "taken from a live process");
    assert!(
        asked.elapsed() >= LEASE_BOUND,
        "the heir waited out the displaced holder's lease gate"
    );
    // The displaced holder's next write is refused: its session was ended
    // (retryable), then the fence.
    let mut fenced = false;
    for _ in 0..3 {
        let mut batch = Batch {
            verify: true,
            ..Batch::default()
        };
        match first.state.apply(&mut batch) {
            Err(StateError::Fenced(fence)) => {
                assert!(fence.by.contains("second"), "{fence}");
                fenced = true;
                break;
            }
            Err(StateError::Unavailable(_)) => {}
            other => panic!("expected the fence, got {other:?}"),
        }
    }
    assert!(fenced);
    drop(heir);
}

#[test]
fn a_gone_holders_shard_is_taken_without_waiting() {
    let location = postgres("gone");
    let host = host_of_shard_0();
    drop(open(&opening(location.clone(), wanted(&host, 2), Start::Resume)).unwrap());
    let mut heir = opening(location, wanted(&host, 2), Start::Resume);
    heir.take_over = true;
    let opened = open(&heir).unwrap();
    assert!(
        opened.displaced.is_empty(),
        "its lock went with its session"
    );
}

#[test]
fn a_job_in_memory_writes_its_output_from_the_start_and_keeps_nothing() {
    let d = dir("memory");
    let out = d.join("out.jsonl");
    let mut o = opening(Location::Memory, wanted("a.test", 1), Start::Resume);
    o.outputs.records = Records::File(out.clone());

    // A file that is not this job's records is refused, and kept.
    std::fs::write(&out, "notes of mine\n").unwrap();
    match open(&o) {
        Err(JobError::Output(OutputError::Foreign(why))) => assert!(why.contains("out.jsonl")),
        other => panic!("expected Foreign, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "notes of mine\n");

    // With --overwrite it is started anew; no state file is made anywhere.
    o.outputs.overwrite = true;
    let mut opened = open(&o).unwrap();
    assert_eq!(opened.notes, []);
    assert_eq!(opened.job.shards, 1);
    admit(opened.state.as_mut(), "a.test", "/one");
    drop(opened);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
    let made: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(made, [std::ffi::OsString::from("out.jsonl")]);

    // Nothing was kept: opened again, the job starts from nothing.
    let again = open(&o).unwrap();
    assert_eq!(again.job.counts.seen, 0);
    assert_eq!(again.notes, []);

    // A re-crawl has no earlier crawl; a stored job is in no store here.
    let recrawl = opening(Location::Memory, wanted("a.test", 1), Start::Recrawl);
    assert!(matches!(
        open(&recrawl),
        Err(JobError::NoEarlierCrawl { .. })
    ));
    let stored = opening(
        Location::Memory,
        Wanted::Stored("abc".into()),
        Start::Resume,
    );
    assert!(matches!(open(&stored), Err(JobError::Missing(name)) if name == "abc"));
}
