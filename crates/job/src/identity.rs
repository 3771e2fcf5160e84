//! What makes two runs the same job: the same seeds, scope options,
//! fields asked for (`--extract`) and number of shards. Concurrency, delays and outputs are not identity: a
//! job may be resumed with other settings.

use crawlkeeper_crawl::CrawlConfig;
use crawlkeeper_store::JobSpec;
use url::Url;

/// The job of a crawl of `seeds` with `config`, split into `shards`:
/// named by a hash of its identity, so that running the same command
/// again, or on another machine, finds it.
pub fn job_spec(config: &CrawlConfig, seeds: &[Url], shards: u32) -> JobSpec {
    let seeds: Vec<String> = seeds.iter().map(Url::to_string).collect();
    let scope = serde_json::to_string(&config.scope).unwrap_or_default();
    let mut identity = format!("{}\n{scope}", seeds.join("\n"));
    // Other fields make other records: another job. None is how every job
    // was named before fields existed.
    if !config.extract.is_empty() {
        let fields = serde_json::to_string(&config.extract).unwrap_or_default();
        identity.push_str(&format!("\nextract={fields}"));
    }
    // A continuous job keeps schedules a one-shot one has not: another
    // job (how often it revisits is not identity).
    if config.revisit.is_some() {
        identity.push_str("\ncontinuous");
    }
    // One shard is how every job was named before shards existed.
    if shards > 1 {
        identity.push_str(&format!("\nshards={shards}"));
    }
    let name = format!(
        "{:012x}",
        xxhash_rust::xxh3::xxh3_64(identity.as_bytes()) >> 16
    );
    JobSpec {
        name,
        seeds,
        options: serde_json::to_string(config).unwrap_or_default(),
        shards: shards.max(1),
    }
}

/// Whether `job` is a continuous crawl (`--continuous`), as its stored
/// options say.
pub fn is_continuous(job: &crawlkeeper_store::JobInfo) -> bool {
    serde_json::from_str::<CrawlConfig>(&job.options).is_ok_and(|c| c.revisit.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seeds_scope_and_shards_make_the_same_job() {
        let seeds = [Url::parse("http://a.test/").unwrap()];
        let mut config = CrawlConfig::default();
        let a = job_spec(&config, &seeds, 1);
        config.engine.max_workers = 7;
        assert_eq!(
            job_spec(&config, &seeds, 1).name,
            a.name,
            "concurrency is not identity"
        );
        assert_ne!(job_spec(&config, &seeds, 3).name, a.name, "shards are");
        assert_eq!(job_spec(&config, &seeds, 3).shards, 3);
        config.scope.max_depth = 2;
        assert_ne!(job_spec(&config, &seeds, 1).name, a.name, "scope is");
        assert_eq!(a.name.len(), 12);
    }

    #[test]
    fn other_fields_make_another_job() {
        let seeds = [Url::parse("http://a.test/").unwrap()];
        let mut config = CrawlConfig::default();
        let none = job_spec(&config, &seeds, 1).name;
        config.extract.fields = vec!["name=h1".parse().unwrap()];
        let h1 = job_spec(&config, &seeds, 1);
        assert_ne!(h1.name, none, "fields are identity");
        assert!(h1.options.contains("\"extract\""), "{}", h1.options);
        config.extract.fields = vec!["name=h2".parse().unwrap()];
        assert_ne!(
            job_spec(&config, &seeds, 1).name,
            h1.name,
            "so are selectors"
        );
        config.extract.fields = vec!["name[]=h1".parse().unwrap()];
        assert_ne!(
            job_spec(&config, &seeds, 1).name,
            h1.name,
            "and all matches"
        );
        config.extract.fields.clear();
        assert_eq!(job_spec(&config, &seeds, 1).name, none);
        assert!(!job_spec(&config, &seeds, 1).options.contains("\"extract\""));
    }
}
