#!/usr/bin/env bash
# schedtwin quick start (Debian 12, as root):
#   ./quickstart.sh          install packages, build, run the main job
#   ./quickstart.sh --test   install packages, build, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${SCHEDTWIN_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
if [[ "${1:-}" == "--test" ]]; then
  ctest --test-dir build --output-on-failure -j"$(nproc)"
else
  ./build/schedtwin reproduce
fi
