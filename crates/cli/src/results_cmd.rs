//! `crawlkeeper results` and `crawlkeeper jobs`: reading a store.

use std::io::{BufWriter, Write};

use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_job::export::{check_export, export_warc};
use crawlkeeper_job::guard::{create, refuse_protected, refuse_protected_warc, state_files};
use crawlkeeper_job::output::{Part, check_existing};
use crawlkeeper_job::records::{RecordsError, write_records};
use crawlkeeper_job::table::{Table, write_csv};
use crawlkeeper_job::warc::WarcOptions;
use crawlkeeper_store::{JobInfo, Store};

use crate::args::{Format, JobsArgs, ResultsArgs, StopArgs};
use crate::exit::{CliError, Outcome};
use crate::state::{fatal, open_existing_store};
use crate::warc_out::warc_info;

/// Runs `crawlkeeper results`: every stored record of a job, in the order
/// the URLs finished.
pub fn results(args: ResultsArgs) -> Result<Outcome, CliError> {
    let table = match (args.format, &args.fields) {
        (Format::Csv, Some(names)) => Some(
            Table::with_fields(names, args.writer).map_err(|e| CliError::Usage(e.to_string()))?,
        ),
        (Format::Csv, None) => Some(Table::core(args.writer)),
        (_, Some(_)) => {
            return Err(CliError::Usage(
                "--fields names the columns of --format csv; it does not go with another format"
                    .into(),
            ));
        }
        (_, None) => None,
    };
    if let (Some(out), None) = (&args.out, &args.store.store) {
        refuse_protected(out, &state_files(&args.store.state, None))?;
    }
    let mut store = open_existing_store(&args.store)?;
    let shown = crawlkeeper_store::location::redact(&args.store.location());
    let job = pick_job(store.as_mut(), args.job.as_deref(), &shown)?;
    if let (Some(out), None) = (&args.out, &args.store.store) {
        refuse_protected(out, &state_files(&args.store.state, Some(&job.name)))?;
    }
    if let Format::Warc = args.format {
        if args.writer {
            return Err(CliError::Usage(
                "--writer adds to JSON Lines records; it does not go with --format warc".into(),
            ));
        }
        return export(store.as_mut(), &job, &args);
    }
    if let Some(out) = &args.out {
        let part = Part {
            job: &job,
            shards: None,
        };
        // A CSV file is not checked against the store: it is replaced
        // only with --overwrite.
        if table.is_some() {
            check_existing(out, None, args.overwrite)?;
        } else {
            check_existing(out, Some((store.as_mut(), part)), args.overwrite)?;
        }
    }
    let out: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(create(path)?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(out);
    let written = match &table {
        Some(table) => write_csv(store.as_mut(), &job, &mut out, table),
        None => write_records(store.as_mut(), &job, &mut out, args.writer),
    };
    written.map_err(|e| match e {
        RecordsError::Store(e) => fatal(e),
        e => CliError::Fatal(e.into()),
    })?;
    Ok(Outcome::Finished)
}

/// `results --format warc`: the job's stored WARC records as WARC files.
fn export(store: &mut dyn Store, job: &JobInfo, args: &ResultsArgs) -> Result<Outcome, CliError> {
    let Some(path) = args.out.clone() else {
        return Err(CliError::Usage(
            "--format warc writes files: give --out FILE.warc.gz".to_owned(),
        ));
    };
    let config: CrawlConfig = serde_json::from_str(&job.options).unwrap_or_default();
    let options = WarcOptions {
        path,
        max_size: args.warc.warc_max_size,
        gzip_level: args.warc.warc_gzip_level,
        info: warc_info(&config),
    };
    if job.counts.done > 0 && store.archives(job.id, 0, 1).map_err(fatal)?.is_empty() {
        return Err(CliError::Usage(format!(
            "job {} kept no page bodies in the store: crawl it with --store-bodies to export it \
             as WARC (or use the files its --warc option wrote)",
            job.name
        )));
    }
    if args.store.store.is_none() {
        let state = state_files(&args.store.state, Some(&job.name));
        refuse_protected_warc(&options, &job.name, args.cdx, "--out", &state)?;
    }
    check_export(&options, &job.name, args.overwrite)?;
    if args.cdx {
        options.check_indexes(&job.name, args.overwrite)?;
    }
    let done = export_warc(store, job, &options)?;
    let files: Vec<String> = done.files.iter().map(|f| f.display().to_string()).collect();
    eprintln!(
        "job {}: {} results exported to {} ({} with their records, {} without a response)",
        job.name,
        done.results - done.missing,
        files.join(", "),
        done.archived,
        done.no_response
    );
    if args.cdx {
        options.index(&job.name)?;
    }
    if done.missing > 0 {
        eprintln!(
            "job {}: {} results left out: fetched in a run without --store-bodies",
            job.name, done.missing
        );
    }
    Ok(Outcome::Finished)
}

/// The job named, or the only one; `location` is shown (redacted).
fn pick_job(
    store: &mut dyn Store,
    name: Option<&str>,
    location: &str,
) -> Result<JobInfo, CliError> {
    let jobs = store.jobs().map_err(fatal)?;
    let names = || {
        jobs.iter()
            .map(|j| j.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match name {
        Some(n) => jobs.iter().find(|j| j.name == n).cloned().ok_or_else(|| {
            CliError::Usage(format!("no job '{n}' in {location} (jobs: {})", names()))
        }),
        None if jobs.len() == 1 => Ok(jobs[0].clone()),
        None if jobs.is_empty() => Err(CliError::Usage(format!("no jobs in {location}"))),
        None => Err(CliError::Usage(format!(
            "{location} has {} jobs; name one: {}",
            jobs.len(),
            names()
        ))),
    }
}

/// Runs `crawlkeeper stop`: asks the processes crawling a job to stop it.
pub fn stop(args: StopArgs) -> Result<Outcome, CliError> {
    let mut store = open_existing_store(&args.store)?;
    let shown = crawlkeeper_store::location::redact(&args.store.location());
    let job = pick_job(store.as_mut(), args.job.as_deref(), &shown)?;
    if !crawlkeeper_job::identity::is_continuous(&job) {
        return Err(CliError::Usage(format!(
            "job {} is not a --continuous crawl: it ends by itself (Ctrl-C or SIGTERM stops it \
             sooner, and the same command resumes it)",
            job.name
        )));
    }
    store.request_stop(job.id).map_err(fatal)?;
    eprintln!(
        "job {}: asked to stop; its crawl stops within seconds, keeping what it fetched",
        job.name
    );
    Ok(Outcome::Finished)
}

/// Runs `crawlkeeper jobs`: one line per job with its counts.
pub fn jobs(args: JobsArgs) -> Result<Outcome, CliError> {
    let mut store = open_existing_store(&args.store)?;
    let jobs = store.jobs().map_err(fatal)?;
    let mut out = std::io::stdout().lock();
    let write = |out: &mut dyn Write, line: String| {
        writeln!(out, "{line}").map_err(|e| CliError::Fatal(e.into()))
    };
    write(
        &mut out,
        format!(
            "{:<12} {:<20} {:>9} {:>9} {:>9} {:>7}  seeds",
            "job", "created", "seen", "done", "pending", "errors"
        ),
    )?;
    for j in jobs {
        let seeds = match j.seeds.len() {
            0 => String::new(),
            1 => j.seeds[0].clone(),
            n => format!("{} (+{} more)", j.seeds[0], n - 1),
        };
        write(
            &mut out,
            format!(
                "{:<12} {:<20} {:>9} {:>9} {:>9} {:>7}  {seeds}",
                j.name,
                j.created_at,
                j.counts.seen,
                j.counts.done,
                j.counts.pending(),
                j.counts.errors
            ),
        )?;
        if j.shards > 1 {
            for s in store.shards(&j).map_err(fatal)? {
                let holder = match (&s.holder, s.live) {
                    (None, _) => "never held".to_owned(),
                    (Some(h), true) => format!("held by {h} (live, generation {})", s.generation),
                    (Some(h), false) => {
                        format!("last held by {h} (gone, generation {})", s.generation)
                    }
                };
                write(
                    &mut out,
                    format!(
                        "  shard {:<4} {:<20} {:>9} {:>9} {:>9} {:>7}  {holder}",
                        format!("{}/{}", s.shard, j.shards),
                        "",
                        s.counts.seen,
                        s.counts.done,
                        s.counts.pending(),
                        s.counts.errors
                    ),
                )?;
            }
        }
    }
    Ok(Outcome::Finished)
}
