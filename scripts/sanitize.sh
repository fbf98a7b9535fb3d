#!/bin/sh
# CI's sanitizer step (issue 8): builds everything with g++ under AddressSanitizer and
# UndefinedBehaviorSanitizer (-DSCHEDTWIN_SANITIZE=ON; UBSan aborts on the first report) and
# warnings as errors, without the benchmark programs, in build-asan, then runs the whole test
# suite there (every test already runs with the --check invariant checker). Prints how long the
# build and the tests took. Exit status: that of the build or of ctest.
#
# Optimisation: -O1 -g1 (line tables only) instead of RelWithDebInfo's -O2 -g: about half the
# compile time under the sanitizers, and reports still name file:line.
#
# Usage: scripts/sanitize.sh [extra ctest arguments, e.g. -E 'CliRun\.TwoWorkloads']
# Environment: BUILD_DIR (default <repo>/build-asan), JOBS (default: the number of CPUs),
#              CXX (default g++), SANITIZE_OPT (default "-O1 -g1").
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-asan}
jobs=${JOBS:-$(nproc)}

# Leaks are findings too (LeakSanitizer's default on Linux, stated here for CI logs).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

start=$(date +%s)
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="${CXX:-g++}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${SANITIZE_OPT:--O1 -g1} -DNDEBUG" \
  -DSCHEDTWIN_SANITIZE=ON -DSCHEDTWIN_WERROR=ON -DSCHEDTWIN_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs"
built=$(date +%s)
status=0
ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@" || status=$?
done_at=$(date +%s)
echo "sanitize.sh: build $((built - start)) s, tests $((done_at - built)) s ($jobs jobs), status $status"
exit "$status"
