#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ (its own workspace, target dir
# fuzz/target), each for a while, and fails if any of them crashed.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Defaults: 30 seconds, every target (url_normalize robots html_extract
# html_scanner cluster_metadata duration status_head sitemap
# processor_answer css_requisites). Before fuzzing, each target replays its
# saved crash inputs in fuzz/regressions/<target>/ (one that still fails
# counts as a failure).
#
# cargo-fuzz needs nightly features; on the stable toolchain they are
# switched on with RUSTC_BOOTSTRAP=1. cargo-fuzz is installed from
# crates.io when missing.
#
# Environment:
#   FUZZ_SANITIZER  address (default), none, ... (cargo fuzz --sanitizer)
#   FUZZ_RSS_MB     libFuzzer -rss_limit_mb (default 2048)
#   FUZZ_JOBS_NICE  niceness of every cargo and fuzzer process (default 19)
#
# Checked-in files are never written: the seeds in fuzz/seeds/<target>/
# are read as a second corpus directory; new inputs go to
# fuzz/corpus/<target>/, crashes to fuzz/artifacts/<target>/ and logs to
# fuzz/artifacts/logs/ (all ignored by git). To keep a crash as a
# regression input, copy it into fuzz/regressions/<target>/ and commit it.
set -euo pipefail

ALL_TARGETS=(url_normalize robots html_extract html_scanner cluster_metadata duration status_head sitemap processor_answer css_requisites)

seconds=${1:-30}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds == 0)); then
    echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2
    exit 2
fi
shift $(($# > 0 ? 1 : 0))
targets=("$@")
((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")
for t in "${targets[@]}"; do
    if [[ ! -f "$(dirname "$0")/../fuzz/fuzz_targets/$t.rs" ]]; then
        echo "unknown target '$t' (known: ${ALL_TARGETS[*]})" >&2
        exit 2
    fi
done

sanitizer=${FUZZ_SANITIZER:-address}
rss_mb=${FUZZ_RSS_MB:-2048}
nice=(nice -n "${FUZZ_JOBS_NICE:-19}")

cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    "${nice[@]}" cargo install cargo-fuzz --locked
fi

echo "== building ${targets[*]} (sanitizer: $sanitizer)"
for t in "${targets[@]}"; do
    "${nice[@]}" cargo fuzz build --sanitizer "$sanitizer" "$t"
done

mkdir -p artifacts/logs
failed=()
for t in "${targets[@]}"; do
    # Saved crash inputs first: each is run once.
    if [[ -d regressions/$t ]] && compgen -G "regressions/$t/*" >/dev/null; then
        echo "== $t: replaying regressions/$t/"
        if ! "${nice[@]}" cargo fuzz run --sanitizer "$sanitizer" "$t" regressions/"$t"/* \
            -- -runs=1 >"artifacts/logs/$t.regressions.log" 2>&1; then
            echo "!! $t: a saved regression input still fails (artifacts/logs/$t.regressions.log):"
            grep -m1 -E "panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer" \
                "artifacts/logs/$t.regressions.log" || true
            failed+=("$t(regression)")
        fi
    fi

    echo "== $t: fuzzing for ${seconds}s"
    mkdir -p "corpus/$t" "artifacts/$t"
    seeds=()
    [[ -d seeds/$t ]] && seeds=("seeds/$t")
    log="artifacts/logs/$t.log"
    status=0
    "${nice[@]}" cargo fuzz run --sanitizer "$sanitizer" "$t" "corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1 || status=$?
    # libFuzzer's last status line (executions, coverage, corpus) and stats.
    grep -E "^#[0-9]+[[:space:]]" "$log" | tail -n 1 || true
    grep -E "^(Done [0-9]+ runs|stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)" "$log" || true
    if ((status != 0)); then
        echo "!! $t: crashed (exit $status); see $log"
        grep -m1 -E "panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|==[0-9]+== ERROR" "$log" || true
        grep -E "^(Test unit written to|artifact_prefix)" "$log" || true
        failed+=("$t")
    else
        echo "== $t: no crash"
    fi
done

if ((${#failed[@]})); then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all ${#targets[@]} targets ran ${seconds}s each without a crash"
