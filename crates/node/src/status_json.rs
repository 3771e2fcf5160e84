//! The cluster as a node's status page gets it every second: a
//! [`ClusterStatus`] with every list cut to a cap and its true length
//! beside it (`<list>_total`), so that the page can say "and N more" and
//! the JSON stays small however many shards, jobs and members there are
//! (a node holding 1,100 shards served 10 MB a second before). The
//! members' tasks are left out (the shards they hold are listed; a task
//! carries the job's cookies and credentials).

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::status::{ClusterStatus, JobStatus, ShardStatus};

/// How much of each list the page gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Members listed.
    pub members: usize,
    /// Shards listed per member.
    pub member_shards: usize,
    /// Names listed per GroupState list.
    pub group_list: usize,
    /// Queued shards listed.
    pub queued: usize,
    /// Jobs listed.
    pub jobs: usize,
    /// Shards listed per job.
    pub job_shards: usize,
    /// Shards listed over all jobs (running jobs first).
    pub shard_rows: usize,
    /// Seeds listed per job.
    pub seeds: usize,
    /// Warnings listed.
    pub warnings: usize,
}

/// The caps of the status page: at most ~150 kB of JSON.
pub const CAPS: Caps = Caps {
    members: 100,
    member_shards: 30,
    group_list: 100,
    queued: 100,
    jobs: 50,
    job_shards: 200,
    shard_rows: 400,
    seeds: 10,
    warnings: 50,
};

/// `status` for the page, every list within `caps`.
pub fn bounded(status: &ClusterStatus, caps: &Caps) -> Value {
    let mut out = Map::new();
    out.insert("group".into(), json!(status.group));
    out.insert(
        "group_state".into(),
        status
            .group_state
            .as_ref()
            .map_or(Value::Null, |g| group_state(g, caps)),
    );
    let members: Vec<Value> = status
        .members
        .iter()
        .take(caps.members)
        .map(|m| {
            json!({
                "name": m.name,
                "state": m.state,
                "heartbeat": m.heartbeat,
                "pulse": m.pulse,
                "task_state": m.task.as_ref().map(|t| &t.running_status),
                "shards": first(&m.shards, caps.member_shards),
                "shards_total": m.shards.len(),
            })
        })
        .collect();
    out.insert("members".into(), Value::Array(members));
    out.insert("members_total".into(), json!(status.members.len()));
    capped(&mut out, "queued", &status.queued, caps.queued);
    let mut rows_left = caps.shard_rows;
    let jobs: Vec<Value> = status
        .jobs
        .iter()
        .take(caps.jobs)
        .map(|j| {
            let n = caps.job_shards.min(rows_left).min(j.shards.len());
            rows_left -= n;
            job(j, n, caps)
        })
        .collect();
    out.insert("jobs".into(), Value::Array(jobs));
    out.insert("jobs_total".into(), json!(status.jobs.len()));
    capped(&mut out, "warnings", &status.warnings, caps.warnings);
    Value::Object(out)
}

fn group_state(g: &crawlkeeper_model::cluster::GroupState, caps: &Caps) -> Value {
    let Ok(Value::Object(whole)) = serde_json::to_value(g) else {
        return Value::Null;
    };
    let mut out = Map::new();
    for (k, v) in whole {
        match v {
            Value::Array(list) => {
                out.insert(format!("{k}_total"), json!(list.len()));
                out.insert(k, Value::Array(first(&list, caps.group_list)));
            }
            other => {
                out.insert(k, other);
            }
        }
    }
    Value::Object(out)
}

/// A job with at most `rows` of its shards: those a live lease holds
/// first, then those with URLs left, then the others; shown in shard
/// order. Its figures are summed over all its shards.
fn job(j: &JobStatus, rows: usize, caps: &Caps) -> Value {
    let mut picked: Vec<&ShardStatus> = j.shards.iter().collect();
    picked.sort_by_key(|s| (!s.live, s.pending == 0, s.shard));
    picked.truncate(rows);
    picked.sort_by_key(|s| s.shard);
    let sum = |f: fn(&ShardStatus) -> u64| j.shards.iter().map(f).sum::<u64>();
    json!({
        "name": j.name,
        "seeds": first(&j.seeds, caps.seeds),
        "seeds_total": j.seeds.len(),
        "created_at": j.created_at,
        "complete": j.complete,
        "continuous": j.continuous,
        "pages_per_second": j.pages_per_second,
        "seen": sum(|s| s.seen),
        "done": sum(|s| s.done),
        "errors": sum(|s| s.errors),
        "live_shards": j.shards.iter().filter(|s| s.live).count(),
        "shards": picked,
        "shards_total": j.shards.len(),
    })
}

fn capped<T: Serialize + Clone>(out: &mut Map<String, Value>, key: &str, list: &[T], cap: usize) {
    out.insert(key.to_owned(), json!(first(list, cap)));
    out.insert(format!("{key}_total"), json!(list.len()));
}

fn first<T: Clone>(list: &[T], cap: usize) -> Vec<T> {
    list.iter().take(cap).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{MemberStatus, Pulse};
    use crawlkeeper_model::cluster::GroupState;

    fn shard(n: u32, live: bool) -> ShardStatus {
        ShardStatus {
            shard: n,
            holder: live.then(|| format!("node-1@some-host.example:{}", 10_000 + n)),
            live,
            generation: 3,
            assigned: Some("node-1".to_owned()),
            seen: 1_000_000 + u64::from(n),
            done: 500_000,
            pending: 500_000 + u64::from(n),
            errors: 12,
            pages_per_second: 1.25,
        }
    }

    fn job(name: &str, shards: u32, complete: bool) -> JobStatus {
        JobStatus {
            name: name.to_owned(),
            seeds: (0..1000)
                .map(|i| format!("https://site{i}.example/"))
                .collect(),
            created_at: "2026-11-26T07:00:00Z".to_owned(),
            complete,
            continuous: None,
            shards: (0..shards).map(|n| shard(n, n % 2 == 1)).collect(),
            pages_per_second: 10.0,
        }
    }

    fn big() -> ClusterStatus {
        let names: Vec<_> = (1..=300)
            .map(|i| format!("node-{i}").parse().unwrap())
            .collect();
        ClusterStatus {
            group: "g".to_owned(),
            group_state: Some(GroupState {
                total_crawler: 300,
                total_runner: 300,
                total_backup: 0,
                standby_id: 1,
                current_crawler: names.clone(),
                current_runner: names.clone(),
                current_backup: Vec::new(),
                fail_crawler: names.clone(),
                fail_runner: names.clone(),
                fail_backup: names,
            }),
            members: (1..=300)
                .map(|i| MemberStatus {
                    name: format!("node-{i}"),
                    state: None,
                    heartbeat: None,
                    pulse: Pulse::Beating,
                    task: None,
                    shards: (0..5000).map(|n| format!("big/{n}")).collect(),
                    processors: Vec::new(),
                    browser: false,
                })
                .collect(),
            queued: (0..5000).map(|n| format!("big/{n}")).collect(),
            jobs: std::iter::once(job("big", 5000, false))
                .chain((0..99).map(|i| job(&format!("j{i}"), 100, true)))
                .collect(),
            warnings: (0..5000).map(|n| format!("shard {n}: a warning")).collect(),
        }
    }

    #[test]
    fn five_thousand_shards_serialise_small_and_carry_their_true_counts() {
        let s = big();
        let whole = serde_json::to_string(&s).unwrap().len();
        let v = bounded(&s, &CAPS);
        let text = v.to_string();
        eprintln!("bounded: {} bytes; whole: {whole} bytes", text.len());
        assert!(
            text.len() < 200_000,
            "{} bytes (whole: {whole})",
            text.len()
        );
        assert!(
            whole > 10 * text.len(),
            "whole {whole}, bounded {}",
            text.len()
        );
        let big = &v["jobs"][0];
        assert_eq!(big["name"], "big");
        assert_eq!(big["shards_total"], 5000);
        assert_eq!(big["shards"].as_array().unwrap().len(), CAPS.job_shards);
        assert_eq!(big["seeds_total"], 1000);
        assert_eq!(big["seeds"].as_array().unwrap().len(), CAPS.seeds);
        assert_eq!(big["live_shards"], 2500);
        assert_eq!(big["done"], 5000_u64 * 500_000);
        // The live ones first, in shard order.
        let shown: Vec<u64> = big["shards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["shard"].as_u64().unwrap())
            .collect();
        assert_eq!(shown, (0..200).map(|i| 2 * i + 1).collect::<Vec<_>>());
        assert_eq!(v["jobs_total"], 100);
        assert_eq!(v["jobs"].as_array().unwrap().len(), CAPS.jobs);
        let rows: usize = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["shards"].as_array().unwrap().len())
            .sum();
        assert_eq!(rows, CAPS.shard_rows);
        assert_eq!(v["members_total"], 300);
        assert_eq!(v["members"].as_array().unwrap().len(), CAPS.members);
        assert_eq!(v["members"][0]["shards_total"], 5000);
        assert_eq!(
            v["members"][0]["shards"].as_array().unwrap().len(),
            CAPS.member_shards
        );
        assert_eq!(v["queued_total"], 5000);
        assert_eq!(v["warnings_total"], 5000);
        assert_eq!(v["warnings"].as_array().unwrap().len(), CAPS.warnings);
        let g = &v["group_state"];
        assert_eq!(g["fail_runner_total"], 300);
        assert_eq!(g["fail_runner"].as_array().unwrap().len(), CAPS.group_list);
        assert_eq!(g["standby_id"], "1");
        assert_eq!(g["total_crawler"], 300);
    }

    #[test]
    fn a_small_cluster_is_shown_whole() {
        let mut s = big();
        s.members.truncate(2);
        s.members.iter_mut().for_each(|m| m.shards.truncate(3));
        s.jobs = vec![job("small", 4, false)];
        let v = bounded(&s, &CAPS);
        assert_eq!(v["jobs"][0]["shards"].as_array().unwrap().len(), 4);
        assert_eq!(v["jobs"][0]["shards_total"], 4);
        assert_eq!(
            v["members"][1]["shards"],
            json!(["big/0", "big/1", "big/2"])
        );
        assert!(
            v["members"][0].get("task").is_none(),
            "no cookies, no credentials"
        );
    }
}
