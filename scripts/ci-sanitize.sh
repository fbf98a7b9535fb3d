#!/bin/sh
# CI's reliability step (issue 8), after the README's test command:
#  1. builds everything with clang under AddressSanitizer + UndefinedBehaviorSanitizer (UBSan
#     aborts on the first report; LeakSanitizer on), warnings as errors, in build-fuzz — the
#     libFuzzer harnesses' build, so one build serves both steps;
#  2. runs the test suite there (every test runs with the --check invariant checker) but three
#     long end-to-end runs that the first step already ran: CliReport.AllSeriesChartsRender
#     (all four series, 15 s, about 9 min instrumented), CliRun.TwoWorkloadsInTheirGroups
#     (three scenario runs with --check, 10 s, over 5 min instrumented) and
#     CliReproduce.SchedIdleBalancingGivesEachSeedsFall (eight 10 s scenarios, 34 s). The code they run
#     is run instrumented by the per-series, golden and scenario tests;
#  3. runs each libFuzzer harness for FUZZ_SECONDS (default 20) from its seed corpus
#     (scripts/fuzz.sh; any crash, sanitizer report, leak, timeout or OOM fails the step),
#     with libFuzzer's -seed=FUZZ_SEED (default 1) so that a finding can be replayed.
# Prints how long each part took. Exit status: non-zero if any part failed.
#
# -O1 -g1 (line tables only): about half the compile time of -O2 -g under the sanitizers,
# and reports still name file:line. scripts/sanitize.sh is the same test run with g++.
#
# Usage: scripts/ci-sanitize.sh [extra ctest arguments]
# Environment: BUILD_DIR (default <repo>/build-fuzz), JOBS (default: the number of CPUs),
#              FUZZ_SECONDS (default 20), FUZZ_SEED (default 1).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$root/build-fuzz}
export JOBS=${JOBS:-$(nproc)}
export FUZZ_OPT="-O1 -g1"
export FUZZ_SEED=${FUZZ_SEED:-1}
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

start=$(date +%s)
cmake -S "$root" -B "$BUILD_DIR" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$FUZZ_OPT -DNDEBUG" -DSCHEDTWIN_FUZZ=ON \
  -DSCHEDTWIN_WERROR=ON -DSCHEDTWIN_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"$JOBS"
built=$(date +%s)
status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$JOBS" \
  -E '^(CliReport\.AllSeriesChartsRender|CliRun\.TwoWorkloadsInTheirGroups|CliReproduce\.SchedIdleBalancingGivesEachSeedsFall)$' \
  "$@" || status=1
tested=$(date +%s)
"$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-20}" || status=1
fuzzed=$(date +%s)
echo "ci-sanitize.sh: build $((built - start)) s, tests $((tested - built)) s," \
  "fuzzing $((fuzzed - tested)) s, status $status"
exit "$status"
