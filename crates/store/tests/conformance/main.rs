//! One conformance suite for every store backend: each test in `suite` runs
//! against SQLite (a temporary file) and PostgreSQL (a fresh schema on the
//! server named by `CRAWLKEEPER_TEST_POSTGRES`, default
//! `postgres://postgres@127.0.0.1:5432/test`; a missing server fails).

mod backends;
mod pg_v6;
mod pg_v7;
mod pg_v8;
mod shards;
mod suite;

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $name() { let mut b = crate::backends::sqlite(); crate::suite::$name(&mut b); })*
        }
        mod postgres {
            $(#[test] fn $name() { let mut b = crate::backends::postgres(); crate::suite::$name(&mut b); })*
        }
    };
}

conformance!(
    jobs_are_found_by_name_and_listed,
    admission_reports_each_url_new_once,
    requisites_are_counted_apart_across_runs,
    a_job_is_complete_when_every_admitted_url_is_done,
    large_admissions_report_known_and_repeated_urls,
    results_are_stored_once_in_finishing_order,
    a_url_finished_without_admission_gets_its_row,
    loads_take_the_shallowest_and_resume_requeues_what_was_loaded,
    a_resume_names_only_hosts_with_queued_urls,
    authority_state_survives,
    deleting_a_job_leaves_the_others,
    a_recrawl_queues_every_url_again_with_what_its_record_tells,
    a_continuous_crawl_s_urls_are_queued_again_when_due,
    archives_are_kept_when_asked_once_per_result_and_go_with_the_job,
    a_job_is_locked_by_one_owner,
    large_batches,
    a_batch_retried_after_an_unconfirmed_commit_keeps_its_results,
    results_written_by_two_connections_keep_one_order,
    urls_admitted_or_finished_by_another_connection_are_known,
);
