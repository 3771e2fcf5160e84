//! The figures `store --scale` measures, and the tables it prints: one
//! per backend, a row per figure, a column per size, and the largest size
//! over the smallest.

use serde::{Deserialize, Serialize};

use crate::store_data::Keys;

/// One measured operation: its cost per unit and the log it wrote.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Op {
    /// Units done (URLs, pages or loads).
    pub units: u64,
    /// Microseconds per unit.
    pub us: f64,
    /// Bytes written per unit: PostgreSQL's WAL (`pg_current_wal_lsn()`
    /// delta, the whole server's), SQLite's writes (`wchar` of
    /// `/proc/self/io`: WAL frames and checkpoints).
    pub written: f64,
    /// URLs returned per unit (loads).
    pub urls: f64,
    /// Bytes read from the disk per unit (SQLite: `read_bytes` of
    /// `/proc/self/io`, page cache misses; PostgreSQL: not known, 0).
    #[serde(default)]
    pub read: f64,
    /// This process's CPU (user and system, `getrusage`) per unit, in
    /// microseconds: for SQLite the store's own work, the rest of `us`
    /// waiting (on the disk, mostly); for PostgreSQL the client's alone.
    #[serde(default)]
    pub cpu: f64,
    /// PostgreSQL's checkpoints while it ran (`pg_stat_bgwriter`, which
    /// counts each as it ends): the first change of a page after each
    /// writes the whole page to the WAL.
    #[serde(default)]
    pub checkpoints: u64,
    /// Of `us`, the time the operation's last step took: SQLite's
    /// checkpoint that copies its log into the file and waits for the
    /// disk (`wal_checkpoint(TRUNCATE)`; 0 for PostgreSQL, whose server
    /// checkpoints on its own).
    #[serde(default)]
    pub settle_us: f64,
}

/// What the resuming process measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Resume {
    /// Opening the store (connect, migrate), in seconds.
    pub open_s: f64,
    /// Finding the job (with its counts), in seconds.
    pub find_s: f64,
    /// `Store::resume`, in seconds.
    pub resume_s: f64,
    /// Authorities with queued URLs it returned.
    pub queued_authorities: u64,
    /// The process's peak RSS (`VmHWM`), in kB.
    pub hwm_kb: u64,
    /// Its RSS after resuming (`VmRSS`), in kB.
    pub rss_kb: u64,
}

/// The figures of one backend at one size.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Figures {
    /// sqlite or postgres.
    pub backend: String,
    /// URLs seeded.
    pub urls: u64,
    /// Authorities they are spread over.
    pub authorities: u64,
    /// Seeding time, in seconds.
    pub seed_s: f64,
    /// Bytes on disk after seeding (tables, indexes; SQLite: file + WAL).
    pub disk_seed: u64,
    /// Bytes per table (PostgreSQL: `pg_total_relation_size`).
    pub tables: Vec<(String, u64)>,
    /// The resuming process.
    pub resume: Resume,
    /// `Store::resume` again, in this process, warm.
    pub resume_warm_s: f64,
    /// Admitting new URLs.
    pub admit_new: Op,
    /// Admitting URLs already in the seen set.
    pub admit_known: Op,
    /// Loading a host's next URLs.
    pub load: Op,
    /// Finishing pages with records, in admission order.
    pub finish: Op,
    /// Finishing pages with records, in random order.
    #[serde(default)]
    pub finish_random: Op,
    /// Finishing the pages the loads returned, in the order loaded (what
    /// a crawl does).
    #[serde(default)]
    pub finish_loaded: Op,
    /// URLs of one host in a row (`--scale-run`).
    #[serde(default)]
    pub run: u64,
    /// How URLs were keyed (`--scale-keys`).
    #[serde(default)]
    pub keys: Option<Keys>,
    /// Bytes on disk after the operations.
    pub disk_after: u64,
    /// Bytes per index of `urls` after the seed (PostgreSQL).
    #[serde(default)]
    pub indexes: Vec<(String, u64)>,
    /// Whether the indexes of `urls` were read into memory before the
    /// operations (`--scale-warm`).
    #[serde(default)]
    pub warm: bool,
    /// Whether the `urls` table was read into memory too (`--scale-warm`
    /// since session 26; SQLite: its key table and `results_url` too, `done_bits` since
    /// version 6).
    #[serde(default)]
    pub warm_rows: bool,
    /// The PostgreSQL server's settings that decide how much of a large
    /// job stays in its memory and how often it checkpoints
    /// (`shared_buffers`, `max_wal_size`, `checkpoint_timeout`), as the
    /// server names them; empty for SQLite and before session 29.
    #[serde(default)]
    pub server: Vec<(String, String)>,
}

/// A size as a column head: 1 M, 10 M, 50 M.
fn size(n: u64) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{} M", n / 1_000_000)
    } else {
        format!("{n}")
    }
}

/// The markdown table of one backend's sizes.
pub fn table(sizes: &[Figures]) -> String {
    let (Some(first), Some(last)) = (sizes.first(), sizes.last()) else {
        return String::new();
    };
    type Row = (&'static str, fn(&Figures) -> f64, usize);
    let rows: &[Row] = &[
        ("seed (bulk load), s", |f| f.seed_s, 0),
        (
            "disk after seed, bytes/URL",
            |f| f.disk_seed as f64 / f.urls as f64,
            0,
        ),
        ("admit a new URL, µs", |f| f.admit_new.us, 1),
        ("  … bytes written per URL", |f| f.admit_new.written, 0),
        ("  … bytes read from disk per URL", |f| f.admit_new.read, 0),
        ("  … this process's CPU, µs per URL", |f| f.admit_new.cpu, 1),
        (
            "  … of the µs, the log copied into the file",
            |f| f.admit_new.settle_us,
            1,
        ),
        (
            "  … checkpoints while it ran",
            |f| f.admit_new.checkpoints as f64,
            0,
        ),
        ("admit a known URL, µs", |f| f.admit_known.us, 1),
        ("  … bytes written per URL", |f| f.admit_known.written, 0),
        (
            "  … bytes read from disk per URL",
            |f| f.admit_known.read,
            0,
        ),
        ("load a host's batch, µs per load", |f| f.load.us, 1),
        ("  … URLs per load", |f| f.load.urls, 1),
        (
            "  … µs per URL loaded",
            |f| f.load.us / f.load.urls.max(1e-9),
            1,
        ),
        ("  … bytes written per load", |f| f.load.written, 0),
        ("  … bytes read from disk per load", |f| f.load.read, 0),
        ("  … this process's CPU, µs per load", |f| f.load.cpu, 1),
        (
            "  … checkpoints while it ran",
            |f| f.load.checkpoints as f64,
            0,
        ),
        (
            "  … of the µs, the log copied into the file",
            |f| f.load.settle_us,
            1,
        ),
        (
            "finish a loaded page (record), in load order, µs",
            |f| f.finish_loaded.us,
            1,
        ),
        ("  … bytes written per page", |f| f.finish_loaded.written, 0),
        (
            "  … bytes read from disk per page",
            |f| f.finish_loaded.read,
            0,
        ),
        (
            "  … this process's CPU, µs per page",
            |f| f.finish_loaded.cpu,
            1,
        ),
        (
            "  … checkpoints while it ran",
            |f| f.finish_loaded.checkpoints as f64,
            0,
        ),
        (
            "  … of the µs, the log copied into the file",
            |f| f.finish_loaded.settle_us,
            1,
        ),
        (
            "finish a page (record), in admission order, µs",
            |f| f.finish.us,
            1,
        ),
        ("  … bytes written per page", |f| f.finish.written, 0),
        ("  … bytes read from disk per page", |f| f.finish.read, 0),
        ("  … this process's CPU, µs per page", |f| f.finish.cpu, 1),
        (
            "  … checkpoints while it ran",
            |f| f.finish.checkpoints as f64,
            0,
        ),
        (
            "finish a page, in random order, µs",
            |f| f.finish_random.us,
            1,
        ),
        ("  … bytes written per page", |f| f.finish_random.written, 0),
        (
            "  … bytes read from disk per page",
            |f| f.finish_random.read,
            0,
        ),
        (
            "  … this process's CPU, µs per page",
            |f| f.finish_random.cpu,
            1,
        ),
        (
            "  … checkpoints while it ran",
            |f| f.finish_random.checkpoints as f64,
            0,
        ),
        (
            "  … of the µs, the log copied into the file",
            |f| f.finish_random.settle_us,
            1,
        ),
        ("open the store, s", |f| f.resume.open_s, 2),
        ("find the job (counts), s", |f| f.resume.find_s, 2),
        ("`Store::resume`, s", |f| f.resume.resume_s, 2),
        ("  … again, warm, s", |f| f.resume_warm_s, 2),
        (
            "  … hosts with queued URLs",
            |f| f.resume.queued_authorities as f64,
            0,
        ),
        (
            "RSS after resume (VmHWM), MB",
            |f| f.resume.hwm_kb as f64 / 1024.0,
            0,
        ),
        (
            "disk after the operations, bytes/URL",
            |f| f.disk_after as f64 / f.urls as f64,
            0,
        ),
    ];
    let keys = match first.keys {
        Some(Keys::Flat) => "flat keys",
        Some(Keys::Host) => "host-prefixed keys",
        None => "keys of before session 22",
    };
    let warm = match (first.warm, first.warm_rows) {
        (true, true) => ", the frontier and seen set (`urls`, its indexes) read into memory first",
        (true, false) => ", the indexes of `urls` read into memory first",
        _ => "",
    };
    let mut out = format!(
        "\n{} — {} authorities, {} URLs per operation, runs of {} URLs of a host, {keys}{warm}\n\n| operation |",
        first.backend,
        first.authorities,
        first.admit_new.units,
        first.run.max(1)
    );
    for f in sizes {
        out += &format!(" {} |", size(f.urls));
    }
    out += &format!(" {} ÷ {} |\n|---|", size(last.urls), size(first.urls));
    out += &"---:|".repeat(sizes.len() + 1);
    out.push('\n');
    for (label, value, digits) in rows {
        // A figure this backend does not measure (PostgreSQL's
        // checkpoints are measured where its settings are: none is a
        // finding).
        let counted = label.contains("checkpoints") && !first.server.is_empty();
        if sizes.iter().all(|f| value(f) == 0.0) && !counted {
            continue;
        }
        out += &format!("| {label} |");
        for f in sizes {
            out += &format!(" {:.*} |", *digits, value(f));
        }
        let (a, b) = (value(first), value(last));
        let ratio = if a > 0.0 {
            format!("{:.2}", b / a)
        } else {
            "–".into()
        };
        out += &format!(" {ratio} |\n");
    }
    out += &server(sizes);
    out += &per_url("\nPostgreSQL tables", &last.tables, last.urls, 0);
    out += &per_url(
        "PostgreSQL's indexes of `urls`",
        &last.indexes,
        last.urls,
        1,
    );
    out
}

/// A line naming the PostgreSQL server's settings, where the sizes were
/// measured with the same (each size's, where they differ).
fn server(sizes: &[Figures]) -> String {
    let named: Vec<(u64, String)> = sizes
        .iter()
        .filter(|f| !f.server.is_empty())
        .map(|f| {
            let each: Vec<String> = f.server.iter().map(|(k, v)| format!("{k} {v}")).collect();
            (f.urls, each.join(", "))
        })
        .collect();
    let Some((_, first)) = named.first() else {
        return String::new();
    };
    if named.iter().all(|(_, line)| line == first) {
        return format!("\nPostgreSQL server: {first}\n");
    }
    let each: Vec<String> = named
        .iter()
        .map(|(n, line)| format!("at {}: {line}", size(*n)))
        .collect();
    format!("\nPostgreSQL server: {}\n", each.join("; "))
}

/// A line naming each of `sizes` (relations and their bytes) with its
/// bytes per URL of a job of `urls`, to `digits` decimals; empty without
/// any.
fn per_url(title: &str, sizes: &[(String, u64)], urls: u64, digits: usize) -> String {
    if sizes.is_empty() {
        return String::new();
    }
    let mut line = format!("{title} at {} (bytes per URL):", size(urls));
    for (name, bytes) in sizes {
        line += &format!(" {name} {:.*};", digits, *bytes as f64 / urls as f64);
    }
    line + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_a_column_per_size_and_the_ratio() {
        let at = |urls: u64, us: f64| Figures {
            backend: "sqlite".into(),
            urls,
            authorities: 1000,
            run: 16,
            keys: Some(Keys::Host),
            admit_new: Op {
                us,
                ..Op::default()
            },
            ..Figures::default()
        };
        let text = table(&[at(1_000_000, 10.0), at(50_000_000, 15.0)]);
        let warm = table(&[Figures {
            warm: true,
            indexes: vec![("urls_key".into(), 2_400_000_000)],
            ..at(50_000_000, 15.0)
        }]);
        assert!(
            warm.contains("host-prefixed keys, the indexes of `urls` read into memory first"),
            "{warm}"
        );
        let rows = table(&[Figures {
            warm: true,
            warm_rows: true,
            ..at(50_000_000, 15.0)
        }]);
        assert!(
            rows.contains("keys, the frontier and seen set (`urls`, its indexes) read into memory"),
            "{rows}"
        );
        assert!(
            warm.contains("indexes of `urls` at 50 M (bytes per URL): urls_key 48.0;"),
            "{warm}"
        );
        assert!(!text.contains("read into memory"), "{text}");
        assert!(
            text.contains("sqlite — 1000 authorities, 0 URLs per operation, runs of 16 URLs of a host, host-prefixed keys"),
            "the workload is named: {text}"
        );
        assert!(
            text.contains("| operation | 1 M | 50 M | 50 M ÷ 1 M |"),
            "{text}"
        );
        assert!(
            text.contains("| admit a new URL, µs | 10.0 | 15.0 | 1.50 |"),
            "{text}"
        );
        // Figures a backend does not measure are left out.
        assert!(!text.contains("bytes read from disk"), "{text}");
        assert!(!text.contains("this process's CPU"), "{text}");
        let cpu = table(&[Figures {
            admit_new: Op {
                us: 10.0,
                cpu: 4.0,
                settle_us: 2.5,
                ..Op::default()
            },
            ..at(1_000_000, 10.0)
        }]);
        assert!(
            cpu.contains("… this process's CPU, µs per URL | 4.0 |"),
            "{cpu}"
        );
        assert!(
            cpu.contains("… of the µs, the log copied into the file | 2.5 |"),
            "{cpu}"
        );
        // Figures saved before the CPU was measured still read.
        let old: Op = serde_json::from_str(r#"{"units":1,"us":2.0,"written":3.0,"urls":0.0}"#)
            .expect("an Op of an older build");
        assert_eq!(old.cpu, 0.0);
    }

    #[test]
    fn the_server_and_its_checkpoints_are_named() {
        let at = |urls: u64, wal: &str| Figures {
            backend: "postgres".into(),
            urls,
            server: vec![
                ("shared_buffers".into(), "128MB".into()),
                ("max_wal_size".into(), wal.into()),
            ],
            finish_loaded: Op {
                us: 10.0,
                checkpoints: urls / 10_000_000,
                ..Op::default()
            },
            ..Figures::default()
        };
        let same = table(&[at(1_000_000, "1GB"), at(50_000_000, "1GB")]);
        let none = table(&[at(1_000_000, "1GB")]);
        assert!(
            none.contains("… checkpoints while it ran | 0 | – |"),
            "none is a finding: {none}"
        );
        assert!(
            same.contains("\nPostgreSQL server: shared_buffers 128MB, max_wal_size 1GB\n"),
            "{same}"
        );
        assert!(
            same.contains("… checkpoints while it ran | 0 | 5 | – |"),
            "{same}"
        );
        let differ = table(&[at(1_000_000, "1GB"), at(50_000_000, "16GB")]);
        assert!(
            differ.contains(
                "PostgreSQL server: at 1 M: shared_buffers 128MB, max_wal_size 1GB; \
                 at 50 M: shared_buffers 128MB, max_wal_size 16GB\n"
            ),
            "{differ}"
        );
        let sqlite = table(&[Figures {
            backend: "sqlite".into(),
            urls: 1_000_000,
            ..Figures::default()
        }]);
        assert!(!sqlite.contains("PostgreSQL server"), "{sqlite}");
        assert!(!sqlite.contains("checkpoints"), "{sqlite}");
    }
}
