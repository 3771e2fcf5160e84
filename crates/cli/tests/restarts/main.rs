//! The end-to-end tests that restart the test PostgreSQL server, in a
//! binary of their own: cargo runs test binaries one after another, so a
//! restart never cuts the connections of the other tests (`tests/it`),
//! and the restarts here take turns ([`TURN`]).

// The helpers of `tests/it`; this binary uses a few of them.
#[allow(dead_code)]
#[path = "../it/common/mod.rs"]
mod common;

mod cluster_continuous_restart;
mod cluster_pg_restart;
mod continuous_pg_restart;
mod crawl_pg_restart;
mod shards_restart;

/// Held for the whole of each test here: one restart at a time.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Restarts the server (Debian's cluster `main`), waiting until it is back.
pub fn restart_postgres() {
    let version = std::fs::read_dir("/etc/postgresql")
        .expect("PostgreSQL from Debian's package (scripts/postgres.sh installs it)")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .max()
        .unwrap();
    let status = std::process::Command::new("pg_ctlcluster")
        .args(["--skip-systemctl-redirect", &version, "main", "restart"])
        .status()
        .unwrap();
    assert!(status.success(), "restarting PostgreSQL failed");
}
