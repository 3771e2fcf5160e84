//! `crawlkeeper crawl`'s arguments checked whole ([`Plan::check`]) and
//! turned into what runs: the configured engine and the job to open.

use crawlkeeper_crawl::{Engine, Registry};
use crawlkeeper_job::guard::{
    Protected, refuse_odd_lock, refuse_protected, refuse_protected_warc, state_files,
};
use crawlkeeper_job::opening::{Outputs, Records, Start, Wanted};
use crawlkeeper_job::seeds::{read_seeds, seed_files, stdin, take_credentials};
use crawlkeeper_job::warc::WarcOptions;
use crawlkeeper_job::{Location, Opening, job_spec};
use crawlkeeper_store::Holder;

use crate::args::CrawlArgs;
use crate::exit::{CliError, engine_error};
use crate::serve::Bound;
use crate::state::location;
use crate::warc_out::{archiver, warc_options};

/// What `crawlkeeper crawl` was asked, checked whole: the engine
/// configured, the job to open with its outputs, and the view's addresses
/// bound. Nothing is written until the job is opened.
pub struct Plan {
    /// The engine, configured (its pipeline built), with no state or sink yet.
    pub engine: Engine,
    /// The job to open, where its state is, and its outputs.
    pub opening: Opening,
    /// The metrics and status addresses, bound.
    pub bound: Bound,
    /// The bounds per host and per IP address the crawl's requests enter
    /// (shared through a PostgreSQL store with the job's other processes).
    pub politeness: std::sync::Arc<crawlkeeper_crawl::Politeness>,
}

impl Plan {
    /// Checks everything the user gave (seeds, options, processors, shards,
    /// the output paths) in the order a user fixes them, before the store
    /// or any file is touched: a problem is a one-line usage error.
    pub fn check(args: &CrawlArgs, mut registry: Registry) -> Result<Self, CliError> {
        args.job.check().map_err(CliError::Usage)?;
        let mut seeds = read_seeds(&args.seeds, stdin()).map_err(|e| CliError::Usage(e.0))?;
        if !args.no_state {
            crate::state::check_location(&args.store)?;
        }
        let bound = Bound::bind(&args.view.serve)?;
        let mut config = args.to_config();
        take_credentials(&mut seeds, &mut config).map_err(|e| CliError::Usage(e.0))?;
        args.job
            .proxy_from_env(&mut config, |name| std::env::var(name).ok())
            .map_err(CliError::Usage)?;
        let warc = warc_options(&args.warc, &config);
        // What goes over the wire is kept only when it is archived.
        config.fetch.capture = warc.is_some() || config.archive.store_bodies;
        if config.archive.store_bodies && args.no_state {
            return Err(CliError::Usage(
                "--store-bodies keeps pages in the state store; not with --no-state".to_owned(),
            ));
        }
        config.archive.gzip_level = args.warc.files.warc_gzip_level;
        let shards = check_shards(args)?;
        args.processors
            .add_to(&mut registry)
            .map_err(CliError::Usage)?;
        let mut engine =
            Engine::configure(config.clone(), seeds.clone(), &registry).map_err(engine_error)?;
        if let Some(w) = &warc {
            engine = engine.archive(archiver(w, &args.warc));
        }
        let spec = job_spec(&config, &seeds, args.shards);
        check_paths(args, warc.as_ref(), &spec.name)?;
        let opening = Opening {
            location: if args.no_state {
                Location::Memory
            } else {
                location(&args.store)
            },
            wanted: Wanted::Spec {
                spec,
                config: Box::new(config),
                seeds,
            },
            start: match (args.fresh, args.recrawl) {
                (true, _) => Start::Fresh,
                (_, true) => Start::Recrawl,
                _ => Start::Resume,
            },
            shards,
            holder: Holder::this_process(),
            take_over: args.take_over,
            outputs: Outputs {
                records: match &args.out {
                    Some(path) => Records::File(path.clone()),
                    None => Records::Stdout,
                },
                warc,
                cdx: args.warc.cdx,
                overwrite: args.overwrite,
            },
            runs: None,
        };
        Ok(Self {
            engine,
            opening,
            bound,
            politeness: registry.politeness().clone(),
        })
    }
}

/// Refuses outputs that would destroy what is the user's: `--out` or a
/// file `--warc` writes (rotations, `--cdx` indexes) naming a seed file,
/// the state file or one of its companions, or each other.
fn check_paths(args: &CrawlArgs, warc: Option<&WarcOptions>, job: &str) -> Result<(), CliError> {
    let mut protected: Vec<Protected> = seed_files(&args.seeds)
        .map(|path| Protected {
            path: path.to_path_buf(),
            what: "a seed file",
        })
        .collect();
    if !args.no_state && args.store.store.is_none() {
        protected.extend(state_files(&args.store.state, Some(job)));
        refuse_odd_lock(&args.store.state, job)?;
    }
    if let Some(out) = &args.out {
        refuse_protected(out, &protected)?;
    }
    let Some(w) = warc else {
        return Ok(());
    };
    if args.shards > 1 || args.take_over {
        return Err(CliError::Usage(
            "--warc is not available yet with --shards or --take-over".to_owned(),
        ));
    }
    if args.out.as_ref().is_some_and(|o| *o == w.path) {
        return Err(CliError::Usage(
            "--warc and --out name the same file".to_owned(),
        ));
    }
    let cdx = args.warc.cdx;
    refuse_protected_warc(w, job, cdx, "--warc", &protected)?;
    if let Some(out) = &args.out {
        let out = Protected {
            path: out.clone(),
            what: "the --out file",
        };
        refuse_protected_warc(w, job, cdx, "--warc", &[out])?;
    }
    Ok(())
}

/// The shards this process crawls, ascending, once the sharding options
/// are checked: shards need a shared store, shard numbers in range, and no
/// `--fresh` (which would delete the other processes' work).
fn check_shards(args: &CrawlArgs) -> Result<Vec<u32>, CliError> {
    let shared = shared_store(args);
    if args.shards > 1 {
        if args.no_state || !shared {
            return Err(CliError::Usage(format!(
                "--shards {} needs a postgres:// --store that every process of the job shares \
                 (a local state file is not shared between machines)",
                args.shards
            )));
        }
        if args.fresh || args.recrawl {
            let flag = if args.fresh { "--fresh" } else { "--recrawl" };
            return Err(CliError::Usage(format!(
                "{flag} would reset the work of every shard's process; not with --shards"
            )));
        }
    }
    if args.take_over && !shared {
        return Err(CliError::Usage(
            "--take-over needs a postgres:// --store (a local state file has one process)".into(),
        ));
    }
    if let Some(i) = args.shard.iter().find(|&&i| i >= args.shards) {
        return Err(CliError::Usage(format!(
            "--shard {i} is not a shard of --shards {} (0 to {})",
            args.shards,
            args.shards - 1
        )));
    }
    if args.shard.is_empty() {
        if args.shards > 1 {
            return Err(CliError::Usage(format!(
                "--shards {} needs --shard I: which shards this process crawls (0 to {})",
                args.shards,
                args.shards - 1
            )));
        }
        return Ok(vec![0]);
    }
    let mut held = args.shard.clone();
    held.sort_unstable();
    held.dedup();
    Ok(held)
}

/// True when the state is in a store several processes can share.
fn shared_store(args: &CrawlArgs) -> bool {
    !args.no_state && location(&args.store).is_shared()
}
