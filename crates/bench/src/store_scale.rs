//! `store --scale`: the store's costs as a job grows (issue #29, "flat to
//! 50,000,000 URLs"). For each size N, one job's frontier and seen set are
//! seeded with N URLs over `--authorities` hosts, half of them done with a
//! record ([`crate::store_seed`]); then, through the real [`Store`] trait on
//! a freshly opened store:
//! - a separate process opens the store and resumes the job (the crawler's
//!   start): time, and its peak RSS;
//! - admitting new URLs, admitting known ones (the seen set), loading
//!   hosts' next URLs and finishing pages with records, in transactions of
//!   `--scale-batch` like the engine's, with the WAL each writes per URL;
//! - disk bytes per URL after the seed and after the operations.
//!
//! One markdown table per backend: a row per figure, a column per size,
//! and the largest size over the smallest. Each size's store is removed
//! before the next is seeded.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use crawlkeeper_model::state::Batch;
use crawlkeeper_model::{Authority, FinishedUrl, FrontierEntry};
use crawlkeeper_store::{PgStore, SqliteStore, Store};

use crate::proc::self_io;
use crate::store_args::{ScaleOpts, StoreArgs};
use crate::store_data::{Urls, authority, record, shuffled};
use crate::store_scale_table::{Figures, Op, Resume};
use crate::store_seed::{self, is_done};
use crate::store_warm;

/// Options of the hidden `store-resume` subcommand.
#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// sqlite or postgres.
    #[arg(long)]
    backend: String,
    /// The SQLite file or the PostgreSQL URL.
    #[arg(long)]
    location: String,
    /// The PostgreSQL schema.
    #[arg(long)]
    schema: Option<String>,
}

/// `VmHWM` and `VmRSS` of this process, in kB.
fn memory_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Opens the store of `backend` at `location`.
fn open(backend: &str, location: &str, schema: Option<&str>) -> Result<Box<dyn Store>> {
    Ok(match backend {
        "sqlite" => Box::new(SqliteStore::open(location)?),
        "postgres" => Box::new(PgStore::connect_in_schema(location, schema)?),
        other => bail!("unknown backend '{other}' (sqlite, postgres)"),
    })
}

/// The hidden `store-resume` subcommand: what a crawler does when it
/// starts on an existing job, timed, then its memory; one JSON line.
pub fn resume_child(args: ResumeArgs) -> Result<()> {
    let started = Instant::now();
    let mut store = open(&args.backend, &args.location, args.schema.as_deref())?;
    let open_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let job = store.find_job("bench")?.context("no job 'bench'")?;
    store.lock_job(&job)?;
    let find_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let resumed = store.resume(job.id)?;
    let resume_s = started.elapsed().as_secs_f64();
    let (hwm_kb, rss_kb) = memory_kb();
    let out = Resume {
        open_s,
        find_s,
        resume_s,
        queued_authorities: resumed.queued.len() as u64,
        hwm_kb,
        rss_kb,
    };
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

/// Runs the resume in a process of its own.
fn resume_in_child(backend: &str, location: &str, schema: Option<&str>) -> Result<Resume> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["store-resume", "--backend", backend, "--location", location]);
    if let Some(s) = schema {
        cmd.args(["--schema", s]);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        bail!(
            "store-resume failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .last()
        .context("store-resume printed nothing")?;
    Ok(serde_json::from_str(line)?)
}

/// Counts bytes written (and read from the disk) while operations run.
enum Meter {
    /// The server's WAL position.
    Wal(Box<postgres::Client>),
    /// This process's `wchar`, writing the SQLite file at this path.
    Io(PathBuf),
}

impl Meter {
    fn read(&mut self) -> Result<u64> {
        match self {
            Self::Wal(c) => {
                let row = c.query_one("SELECT (pg_current_wal_lsn() - '0/0')::bigint", &[])?;
                Ok(row.get::<_, i64>(0) as u64)
            }
            Self::Io(_) => self_io("wchar:"),
        }
    }

    /// The server's checkpoints so far (0 for SQLite, which the
    /// operations checkpoint themselves: [`Self::settle`]).
    fn checkpoints(&mut self) -> Result<u64> {
        match self {
            Self::Wal(c) => {
                let row = c.query_one(
                    "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter",
                    &[],
                )?;
                Ok(row.get::<_, i64>(0) as u64)
            }
            Self::Io(_) => Ok(0),
        }
    }

    /// Bytes read from the disk so far, where known.
    fn disk_reads(&self) -> Result<u64> {
        match self {
            Self::Wal(_) => Ok(0),
            Self::Io(_) => self_io("read_bytes:"),
        }
    }

    /// Ends an operation: SQLite's log is copied into the file and
    /// restarted, so that an operation pays for the checkpoint of what it
    /// wrote and the next starts with an empty log (the store checkpoints
    /// on a thread of its own, which would otherwise copy one
    /// operation's pages while the next is measured). The log's file
    /// keeps its size, as in a crawl, where the log restarts over the
    /// blocks it had: emptied (`TRUNCATE`, before session 30), the next
    /// operation paid for the file system's new blocks, zeroed page by
    /// page (7 % of the CPU of admitting at 50 million URLs).
    fn settle(&mut self) -> Result<()> {
        if let Self::Io(path) = self {
            let c = rusqlite::Connection::open(path)?;
            c.busy_timeout(std::time::Duration::from_secs(30))?;
            c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
        }
        Ok(())
    }
}

/// Applies `batches` one by one, timed: the cost per unit of `units`.
fn timed(
    store: &mut dyn Store,
    meter: &mut Meter,
    job: crawlkeeper_store::JobId,
    batches: &mut [Batch],
    units: u64,
    mut check: impl FnMut(&Batch) -> Result<()>,
) -> Result<Op> {
    let before = meter.read()?;
    let checkpoints_before = meter.checkpoints()?;
    let read_before = meter.disk_reads()?;
    let cpu_before = crate::proc::own_cpu();
    let started = Instant::now();
    for b in batches.iter_mut() {
        store.apply(job, b)?;
        check(b)?;
    }
    let settling = Instant::now();
    meter.settle()?;
    let settle = settling.elapsed().as_secs_f64();
    let took = started.elapsed().as_secs_f64();
    let written = meter.read()?.saturating_sub(before);
    let read = meter.disk_reads()?.saturating_sub(read_before);
    let cpu = crate::proc::own_cpu().saturating_sub(cpu_before);
    Ok(Op {
        units,
        us: took * 1e6 / units.max(1) as f64,
        written: written as f64 / units.max(1) as f64,
        urls: 0.0,
        read: read as f64 / units.max(1) as f64,
        cpu: cpu.as_secs_f64() * 1e6 / units.max(1) as f64,
        checkpoints: meter.checkpoints()?.saturating_sub(checkpoints_before),
        settle_us: settle * 1e6 / units.max(1) as f64,
    })
}

/// The operations on an open store whose job holds `n` URLs of `u`.
fn operations(
    store: &mut dyn Store,
    meter: &mut Meter,
    job: crawlkeeper_store::JobId,
    n: u64,
    u: &Urls,
    o: &ScaleOpts,
    f: &mut Figures,
) -> Result<()> {
    let per = o.per_txn as u64;
    // What the resume wrote is not the first operation's.
    meter.settle()?;
    let admits = |first: &dyn Fn(u64) -> u64| -> Vec<Batch> {
        (0..o.ops.div_ceil(per))
            .map(|b| Batch {
                admit: (b * per..((b + 1) * per).min(o.ops))
                    .map(|j| {
                        let (e, a) = u.entry(first(j));
                        (e, a, false)
                    })
                    .collect(),
                ..Batch::default()
            })
            .collect()
    };
    let mut new = admits(&|j| n + j);
    f.admit_new = timed(store, meter, job, &mut new, o.ops, |b| {
        anyhow::ensure!(b.admitted.iter().all(|x| *x), "a new URL was known");
        Ok(())
    })?;
    eprintln!("  admit new: {:.1} µs/URL", f.admit_new.us);
    // Known URLs come as new ones do: a page's links, a run of one host's
    // URLs (runs at random).
    let run = u.run.max(1);
    let runs = (n / run).max(1);
    let mut known = admits(&|j| shuffled(j / run, runs) * run + j % run);
    f.admit_known = timed(store, meter, job, &mut known, o.ops, |b| {
        anyhow::ensure!(b.admitted.iter().all(|x| !*x), "a known URL was new");
        Ok(())
    })?;
    eprintln!("  admit known: {:.1} µs/URL", f.admit_known.us);
    // Hosts with URLs, at random: those of random runs.
    let mut loads: Vec<Batch> = (0..o.loads.div_ceil(16))
        .map(|b| Batch {
            load: (b * 16..((b + 1) * 16).min(o.loads))
                .map(|j| (authority(u.host(shuffled(j, runs) * run)), o.load_limit))
                .collect(),
            ..Batch::default()
        })
        .collect();
    let mut loaded: Vec<(FrontierEntry, Authority)> = Vec::new();
    f.load = timed(store, meter, job, &mut loads, o.loads, |b| {
        for (entries, (authority, _)) in b.loaded.iter().zip(&b.load) {
            loaded.extend(entries.iter().map(|e| (e.clone(), authority.clone())));
        }
        Ok(())
    })?;
    f.load.urls = loaded.len() as f64 / o.loads.max(1) as f64;
    eprintln!(
        "  load: {:.1} µs/load, {:.1} URLs/load",
        f.load.us, f.load.urls
    );
    // What a crawl does: the URLs loaded, finished host by host.
    loaded.truncate(o.ops as usize);
    f.finish_loaded = finish(store, meter, job, o, &loaded)?;
    let finished: std::collections::HashSet<u128> = loaded.iter().map(|(e, _)| e.key).collect();
    eprintln!("  finish loaded: {:.1} µs/page", f.finish_loaded.us);
    // Queued URLs finished with their records: in admission order (the
    // oldest of the second half, as a breadth-first crawl finishes them),
    // then in random order (of the first half).
    let in_order: Vec<(FrontierEntry, Authority)> = (n / 2..n)
        .filter(|&i| !is_done(i))
        .map(|i| u.entry(i))
        .filter(|(e, _)| !finished.contains(&e.key))
        .take(o.ops.min(n / 4) as usize)
        .collect();
    f.finish = finish(store, meter, job, o, &in_order)?;
    eprintln!("  finish in order: {:.1} µs/page", f.finish.us);
    let random: Vec<(FrontierEntry, Authority)> = (o.ops..)
        .map(|j| shuffled(j, n))
        .filter(|&i| i < n / 2 && !is_done(i))
        .map(|i| u.entry(i))
        .filter(|(e, _)| !finished.contains(&e.key))
        .take(o.ops.min(n / 8) as usize)
        .collect();
    f.finish_random = finish(store, meter, job, o, &random)?;
    eprintln!("  finish at random: {:.1} µs/page", f.finish_random.us);
    Ok(())
}

/// Finishes the queued or loaded URLs `urls` with their records, timed.
fn finish(
    store: &mut dyn Store,
    meter: &mut Meter,
    job: crawlkeeper_store::JobId,
    o: &ScaleOpts,
    urls: &[(FrontierEntry, Authority)],
) -> Result<Op> {
    let mut batches: Vec<Batch> = urls
        .chunks(o.per_txn)
        .map(|part| Batch {
            finished: part
                .iter()
                .map(|(e, a)| FinishedUrl::new(e.key, record(e, a)))
                .collect(),
            ..Batch::default()
        })
        .collect();
    timed(store, meter, job, &mut batches, urls.len() as u64, |b| {
        anyhow::ensure!(b.recorded.iter().all(|x| *x), "a page was done already");
        Ok(())
    })
}

/// Sizes of a directory's files.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The server's settings that decide how much of a large job stays in
/// its memory and how often it checkpoints.
fn pg_settings(c: &mut postgres::Client) -> Result<Vec<(String, String)>> {
    let rows = c.query(
        "SELECT n, current_setting(n) FROM unnest(ARRAY['shared_buffers', 'max_wal_size',
             'checkpoint_timeout']) WITH ORDINALITY AS s(n, o) ORDER BY o",
        &[],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// Bytes per table of `schema` (tables, indexes, TOAST).
fn pg_tables(url: &str, schema: &str) -> Result<Vec<(String, u64)>> {
    pg_sizes(
        url,
        "SELECT c.relname::text, pg_total_relation_size(c.oid) FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 2 DESC",
        schema,
    )
}

/// Bytes per index of `urls` in `schema`.
fn pg_indexes(url: &str, schema: &str) -> Result<Vec<(String, u64)>> {
    pg_sizes(
        url,
        "SELECT c.relname::text, pg_relation_size(c.oid) FROM pg_index i
         JOIN pg_class c ON c.oid = i.indexrelid
         JOIN pg_class t ON t.oid = i.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
         WHERE n.nspname = $1 AND t.relname = 'urls' ORDER BY 2 DESC",
        schema,
    )
}

/// The names and sizes `sql` reads of `schema` (`$1`).
fn pg_sizes(url: &str, sql: &str, schema: &str) -> Result<Vec<(String, u64)>> {
    let mut c = postgres::Client::connect(url, postgres::NoTls)?;
    let rows = c.query(sql, &[&schema])?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1) as u64))
        .collect())
}

/// Removes a size's store when dropped, however the size ended.
enum Cleanup {
    Dir(PathBuf),
    Schema(String, String),
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        match self {
            Self::Dir(d) => {
                let _ = std::fs::remove_dir_all(d);
            }
            Self::Schema(url, s) => {
                if let Ok(mut c) = postgres::Client::connect(url, postgres::NoTls) {
                    let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"));
                }
            }
        }
    }
}

/// Free bytes on the file system holding `path`.
fn free_bytes(path: &Path) -> u64 {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return 0;
    };
    // SAFETY: statvfs fills the struct we own from a valid C string.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return 0;
    }
    s.f_bavail as u64 * s.f_frsize as u64
}

/// Seeds and measures one backend at one size.
fn one_size(backend: &str, n: u64, args: &StoreArgs) -> Result<Figures> {
    let o = &args.scale_opts;
    let u = Urls {
        authorities: args.authorities,
        run: o.run,
        keys: o.keys,
    };
    let m = u.authorities;
    let mut f = Figures {
        backend: backend.into(),
        urls: n,
        authorities: m,
        run: u.run,
        keys: Some(u.keys),
        ..Figures::default()
    };
    let started = Instant::now();
    let (location, schema, cleanup, mut meter) = match backend {
        "sqlite" => {
            let base = o.dir.clone().unwrap_or_else(std::env::temp_dir);
            let dir = base.join(format!("crawlkeeper-scale-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            let cleanup = Cleanup::Dir(dir.clone());
            let path = dir.join("state.db");
            store_seed::sqlite(&path, n, &u)?;
            f.disk_seed = dir_bytes(&dir);
            let location = path.to_string_lossy().into_owned();
            (location, None, cleanup, Meter::Io(path))
        }
        "postgres" => {
            let schema = format!("ck_scale_{}_{n}", std::process::id());
            let cleanup = Cleanup::Schema(args.postgres.clone(), schema.clone());
            store_seed::postgres(&args.postgres, &schema, n, &u)?;
            f.tables = pg_tables(&args.postgres, &schema)?;
            f.indexes = pg_indexes(&args.postgres, &schema)?;
            f.disk_seed = f.tables.iter().map(|(_, b)| b).sum();
            let mut c = postgres::Client::connect(&args.postgres, postgres::NoTls)?;
            f.server = pg_settings(&mut c)?;
            (
                args.postgres.clone(),
                Some(schema),
                cleanup,
                Meter::Wal(Box::new(c)),
            )
        }
        other => bail!("unknown backend '{other}' (sqlite, postgres)"),
    };
    f.seed_s = started.elapsed().as_secs_f64();
    eprintln!(
        "{backend} {n}: seeded in {:.0} s, {:.0} bytes/URL",
        f.seed_s,
        f.disk_seed as f64 / n as f64
    );
    f.resume = resume_in_child(backend, &location, schema.as_deref())?;
    eprintln!(
        "  resume (own process): open {:.2} s, find job {:.2} s, resume {:.2} s, VmHWM {} MB",
        f.resume.open_s,
        f.resume.find_s,
        f.resume.resume_s,
        f.resume.hwm_kb / 1024
    );
    let mut store = open(backend, &location, schema.as_deref())?;
    let job = store.find_job("bench")?.context("no job 'bench'")?;
    store.lock_job(&job)?;
    let started = Instant::now();
    store.resume(job.id)?;
    f.resume_warm_s = started.elapsed().as_secs_f64();
    if o.warm {
        let started = Instant::now();
        let bytes = match backend {
            "sqlite" => store_warm::sqlite(Path::new(&location))?,
            _ => store_warm::pg(&args.postgres, schema.as_deref().unwrap_or_default())?,
        };
        f.warm = true;
        f.warm_rows = true;
        eprintln!(
            "  urls and its indexes read into memory: {} MB, {:.0} s",
            bytes >> 20,
            started.elapsed().as_secs_f64()
        );
    }
    operations(store.as_mut(), &mut meter, job.id, n, &u, o, &mut f)?;
    drop(store);
    if o.explain {
        crate::store_scale_explain::explain(backend, &location, schema.as_deref(), job.id.0, m)?;
    }
    if o.keep {
        println!("kept: {location} {}", schema.as_deref().unwrap_or_default());
        std::mem::forget(cleanup);
    }
    f.disk_after = match backend {
        "sqlite" => dir_bytes(Path::new(&location).parent().context("no dir")?),
        _ => pg_tables(&args.postgres, schema.as_deref().unwrap_or_default())?
            .iter()
            .map(|(_, b)| b)
            .sum(),
    };
    Ok(f)
}

/// The variable that makes `store --scale` measure one backend at one
/// size (`backend:urls`) and print its figures, in a process of its own.
const ONE_SIZE: &str = "CRAWLKEEPER_BENCH_SCALE_ONE";

/// How the figures of one size come back from its process.
const FIGURES_LINE: &str = "figures: ";

/// Measures one size in a process of its own: this command again, told
/// by [`ONE_SIZE`] which size. A size measured after another in the same
/// process cost more (admitting a new URL at 50 M: 15.8–16.4 µs after 1 M,
/// 6.9–7.6 alone, the process's own CPU up with it; session 29).
fn one_size_in_child(backend: &str, n: u64) -> Result<Figures> {
    let out = Command::new(std::env::current_exe()?)
        .args(std::env::args_os().skip(1))
        .env(ONE_SIZE, format!("{backend}:{n}"))
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut figures = None;
    for line in text.lines() {
        match line.strip_prefix(FIGURES_LINE) {
            Some(json) => figures = Some(serde_json::from_str(json)?),
            None => println!("{line}"),
        }
    }
    if !out.status.success() {
        bail!("measuring {backend} at {n} URLs failed ({})", out.status);
    }
    figures.with_context(|| format!("measuring {backend} at {n} URLs printed no figures"))
}

/// The backend and size [`ONE_SIZE`] names (`backend:urls`).
fn one_size_of(value: &str) -> Option<(&str, u64)> {
    let (backend, n) = value.split_once(':')?;
    Some((backend, n.parse().ok()?))
}

/// Runs `store --scale`.
pub fn run(args: &StoreArgs) -> Result<()> {
    let o = &args.scale_opts;
    if let Ok(one) = std::env::var(ONE_SIZE) {
        let (backend, n) =
            one_size_of(&one).with_context(|| format!("{ONE_SIZE}={one}: not backend:urls"))?;
        let f = one_size(backend, n, args)?;
        println!("{FIGURES_LINE}{}", serde_json::to_string(&f)?);
        return Ok(());
    }
    if let Some(path) = &o.from {
        let text = std::fs::read_to_string(path)?;
        let all: Vec<Figures> = text
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        for backend in &args.backend {
            let mut sizes: Vec<Figures> = all
                .iter()
                .filter(|f| f.backend == *backend && args.scale.contains(&f.urls))
                .cloned()
                .collect();
            sizes.sort_by_key(|f| f.urls);
            print!("{}", crate::store_scale_table::table(&sizes));
        }
        return Ok(());
    }
    for backend in &args.backend {
        let mut done: Vec<Figures> = Vec::new();
        for &n in &args.scale {
            // Disk: as much per URL as the last size took (before any:
            // ten million URLs took 470 bytes per URL in SQLite, 620 in
            // PostgreSQL), a fifth more, and the spare.
            let first = if backend == "sqlite" { 500.0 } else { 650.0 };
            let per_url = done
                .last()
                .map_or(first, |f| f.disk_after as f64 / f.urls as f64);
            let need = (per_url * 1.2 * n as f64) as u64 + o.spare_gb * 1_000_000_000;
            let at = o.dir.clone().unwrap_or_else(std::env::temp_dir);
            std::fs::create_dir_all(&at)
                .with_context(|| format!("cannot create --scale-dir {}", at.display()))?;
            let free = free_bytes(if backend == "sqlite" {
                &at
            } else {
                Path::new("/")
            });
            if free < need {
                println!(
                    "{backend}: {n} URLs skipped: about {:.0} GB needed with the spare, {:.0} GB free",
                    need as f64 / 1e9,
                    free as f64 / 1e9
                );
                continue;
            }
            let f = one_size_in_child(backend, n)?;
            if let Some(path) = &o.json {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?;
                writeln!(file, "{}", serde_json::to_string(&f)?)?;
            }
            done.push(f);
        }
        print!("{}", crate::store_scale_table::table(&done));
    }
    Ok(())
}

#[cfg(test)]
mod one_size_tests {
    use super::one_size_of;

    #[test]
    fn the_child_is_told_its_backend_and_size() {
        assert_eq!(one_size_of("sqlite:50000000"), Some(("sqlite", 50_000_000)));
        assert_eq!(
            one_size_of("postgres:1000000"),
            Some(("postgres", 1_000_000))
        );
        assert_eq!(one_size_of("sqlite"), None);
        assert_eq!(one_size_of("sqlite:many"), None);
    }
}
