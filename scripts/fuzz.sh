#!/bin/sh
# Builds the libFuzzer harnesses of fuzz/ with clang (-fsanitize=fuzzer,address,undefined) into
# build-fuzz and runs each for SECONDS (default 60), then prints one line per harness:
# executions, executions/s and libFuzzer's final coverage (cov: edges, ft: features).
# Exit status 1 if any harness found a crash, a sanitizer report, a leak, a timeout (-timeout=10
# s for one input) or ran out of memory (-rss_limit_mb=2048); its input is saved as
# build-fuzz/fuzz-work/<name>/crash-* (or timeout-*, oom-*, leak-*), to replay with
#   build-fuzz/fuzz/<name>_fuzz <that file>
# Seeds come from fuzz/corpus/<name>/ (read only); what the fuzzer adds goes to
# build-fuzz/fuzz-work/<name>/corpus/ and is reused by the next run.
#
# Usage: scripts/fuzz.sh [SECONDS]
# Environment: FUZZ_TARGETS="rtapp machine capture scenario" (the default, all four),
#              BUILD_DIR (default <repo>/build-fuzz), JOBS (build parallelism, default 2),
#              FUZZ_SEED (libFuzzer's -seed; unset: a new random seed per run, to explore;
#              scripts/ci-sanitize.sh sets 1, so that CI walks the same inputs each time and a
#              finding there can be replayed), CXX (default clang++), FUZZ_OPT (compile flags, default "-O2 -g";
#              scripts/ci-sanitize.sh shares the build with the sanitizer test run at "-O1 -g1"),
#              FUZZ_SANITIZERS ("address,undefined", the default, or "undefined": for long runs
#              by hand in a BUILD_DIR of their own; replay the grown corpus with the default
#              build afterwards, see fuzz/README.md).
set -eu

secs=${1:-60}
case $secs in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
targets=${FUZZ_TARGETS:-rtapp machine capture scenario}

cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${FUZZ_OPT:--O2 -g} -DNDEBUG" \
  -DSCHEDTWIN_FUZZ=ON -DSCHEDTWIN_FUZZ_SANITIZERS="${FUZZ_SANITIZERS:-address,undefined}" \
  -DSCHEDTWIN_BENCH=OFF >/dev/null
bin_targets=
for t in $targets; do bin_targets="$bin_targets ${t}_fuzz"; done
# shellcheck disable=SC2086
cmake --build "$build" --target $bin_targets -j"${JOBS:-2}"

failed=0
summary=
for t in $targets; do
  work=$build/fuzz-work/$t
  mkdir -p "$work/corpus"
  log=$work/last-run.log
  echo "== $t: ${secs} s"
  seed_opt=
  [ -n "${FUZZ_SEED:-}" ] && seed_opt="-seed=$FUZZ_SEED"
  set +e
  # shellcheck disable=SC2086
  (cd "$work" && "$build/fuzz/${t}_fuzz" $seed_opt -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -dict="$root/fuzz/$t.dict" -artifact_prefix="$work/" \
    "$work/corpus" "$root/fuzz/corpus/$t") >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
  line=$(printf '%-9s %10s execs %6s/s  %-24s' "$t" "${execs:-?}" "${rate:-?}" "${cov:-cov: ? ft: ?}")
  if [ "$rc" -ne 0 ]; then
    failed=1
    artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
    line="$line FAILED (exit $rc) ${artifact:-see $log}"
    grep -m 1 -E 'ERROR: |runtime error|FUZZ FINDING|terminate called|ALARM' "$log" >&2 || true
  fi
  echo "$line"
  summary="$summary$line
"
done
echo
echo "harness        executions    rate   final coverage"
printf '%s' "$summary"
exit "$failed"
