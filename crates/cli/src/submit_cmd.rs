//! `crawlkeeper submit`: a crawl job for a cluster. Everything is checked
//! (seeds, options, processors) before anything is written; then the job
//! goes to the store and its shards to the Runners. With `--wait` it
//! blocks until the job is complete.

use crawlkeeper_cluster::node::Placement;
use crawlkeeper_cluster::{Coordinator, Layout, metadata};
use crawlkeeper_crawl::{Engine, Registry};
use crawlkeeper_job::identity::is_continuous;
use crawlkeeper_job::job_spec;
use crawlkeeper_model::cluster::GroupState;
use crawlkeeper_node::submit::{SubmitJobError, submit_job};
use crawlkeeper_node::tasks::complete;
use crawlkeeper_node::wait::{JobEnd, wait_for_job};
use crawlkeeper_store::Store;
use crawlkeeper_store::location::scrub;

use crate::args_cluster::SubmitArgs;
use crate::cluster::{check_store, connect_zk, open_store};
use crate::exit::engine_error;
use crate::exit::{CliError, Outcome};
use crawlkeeper_job::seeds::{read_seeds, stdin, take_credentials};

/// Runs `crawlkeeper submit`.
pub async fn run(args: SubmitArgs, registry: &Registry) -> Result<Outcome, CliError> {
    args.job.check().map_err(CliError::Usage)?;
    let mut seeds = read_seeds(&args.seeds, stdin()).map_err(|e| CliError::Usage(e.0))?;
    let mut config = args.job.to_config();
    take_credentials(&mut seeds, &mut config).map_err(|e| CliError::Usage(e.0))?;
    // The nodes say what a processor name runs: here only the names are
    // checked (spelling, twice), and below that a live Runner runs them.
    let mut checked = config.clone();
    checked.pipeline.processors.clear();
    // So do they say with what a page is rendered: here only how.
    if let Some(render) = checked.render.take() {
        render.plan().map_err(CliError::Usage)?;
    }
    config
        .validate()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    Engine::configure(checked, seeds.clone(), registry).map_err(engine_error)?;
    check_store(&args.cluster)?;
    let zk = connect_zk(&args.cluster).await?;
    let layout = Layout::new(args.cluster.group.as_str())
        .map_err(|e| CliError::Usage(format!("--group {}: {e}", args.cluster.group)))?;
    let group = metadata::read::<GroupState>(&zk, &layout.group_state())
        .await
        .map_err(|e| CliError::Fatal(anyhow::anyhow!("ZooKeeper: {e}")))?
        .map(|(g, _)| g)
        .filter(|g| !g.current_runner.is_empty())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "no group {} with a Runner at {} (start its nodes first)",
                args.cluster.group, args.cluster.zookeeper
            ))
        })?;
    let shards = args
        .shards
        .unwrap_or(group.current_runner.len() as u32)
        .max(1);
    let spec = job_spec(&config, &seeds, shards);
    let store = open_store(&args.cluster).await?;
    // Said once (not its chain of causes again), without the password.
    let submitted = submit_job(&zk, args.cluster.group.as_str(), store, spec)
        .await
        .map_err(|e| {
            let why = format!(
                "job not submitted: {}",
                scrub(&e.to_string(), &args.cluster.store)
            );
            match e {
                SubmitJobError::NoProcessor { .. } => CliError::Usage(why),
                _ => CliError::Fatal(anyhow::anyhow!(why)),
            }
        })?;
    let job = &submitted.job;
    println!("{}", job.name);
    if !args.quiet {
        let held = !submitted.placed.is_empty() || !submitted.already.is_empty();
        if complete(job, held) && is_continuous(job) {
            eprintln!(
                "job {} was stopped (`crawlkeeper stop`) and stays stopped ({} URLs known); \
                 see `crawlkeeper results` for every fetch",
                job.name, job.counts.seen
            );
        } else if complete(job, held) {
            eprintln!(
                "job {} is complete already ({} URLs done); see `crawlkeeper results`",
                job.name, job.counts.done
            );
        }
        for (shard, placement) in &submitted.placed {
            match placement {
                Placement::Runner(r) => eprintln!("shard {shard} of {}: {r}", job.shards),
                Placement::Queued(_) => {
                    eprintln!(
                        "shard {shard} of {}: queued for the next Runner",
                        job.shards
                    )
                }
            }
        }
        if !submitted.already.is_empty() {
            eprintln!(
                "shards {:?} were held already (the job was submitted before)",
                submitted.already
            );
        }
    }
    if !args.wait {
        return Ok(Outcome::Finished);
    }
    let store = open_store(&args.cluster).await?;
    let mut store = Some(store);
    let outcome = wait(&zk, &layout, &mut store, &job.name).await;
    if let Some(store) = store {
        crawlkeeper_node::release(store);
    }
    outcome
}

/// Waits until the job is complete (exit 0; 1 when every URL failed) or
/// one of its shards failed on its Runner (exit 1).
async fn wait(
    zk: &impl Coordinator,
    layout: &Layout,
    store: &mut Option<Box<dyn Store>>,
    name: &str,
) -> Result<Outcome, CliError> {
    let end = wait_for_job(zk, layout, store, name)
        .await
        .map_err(|e| CliError::Fatal(e.into()))?;
    Ok(match end {
        JobEnd::Complete(job) if is_continuous(&job) => {
            // (A continuous job's counts are its URLs as they stand, not
            // its fetches: `results` has every fetch.)
            eprintln!(
                "job {name} stopped: {} URLs known, {} of them queued at the stop; \
                 `crawlkeeper results` has every fetch",
                job.counts.seen,
                job.counts.pending()
            );
            Outcome::Finished
        }
        JobEnd::Complete(job) if job.counts.errors == job.counts.done => {
            eprintln!(
                "job {name} complete: every one of its {} URLs failed",
                job.counts.done
            );
            Outcome::AllFailed
        }
        JobEnd::Complete(job) => {
            eprintln!(
                "job {name} complete: {} URLs, {} with errors",
                job.counts.done, job.counts.errors
            );
            Outcome::Finished
        }
        JobEnd::ShardFailed(why) => {
            eprintln!("job {name} failed: {why}");
            Outcome::AllFailed
        }
        _ => Outcome::AllFailed,
    })
}
