//! One conformance suite for every coordinator backend: each test in
//! `suite` runs on the in-memory coordinator (paused clock) and on a real
//! ZooKeeper (the server named by `CRAWLKEEPER_TEST_ZOOKEEPER`, started by
//! `scripts/test.sh`; each test works under a chroot of its own).

mod backends;
mod suite;

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    crate::conformance::suite::$name(&crate::conformance::backends::Memory::new()).await;
                }
            )*
        }
        mod zookeeper {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::conformance::suite::$name(&crate::conformance::backends::Zk::new()).await;
                }
            )*
        }
    };
}

conformance!(
    versions_guard_every_write,
    compare_and_set_counts_every_increment_under_contention,
    ephemeral_nodes_vanish_when_their_session_expires,
    sequential_nodes_are_ordered,
    watches_fire_once_per_change,
    transactions_are_atomic,
    the_lock_is_exclusive_and_released_on_session_loss,
    the_lock_times_out,
    large_values_are_rejected_cleanly,
    bad_paths_are_rejected,
    a_closed_session_takes_its_ephemeral_nodes,
    meta_data_lives_at_smoothcrawler_clusters_paths,
);
