#!/usr/bin/env bash
# Installs the Debian 12 packages schedtwin builds and tests with, and the report's chart
# libraries from npm (report/package-lock.json). Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(g++ cmake make git nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
      libbenchmark-dev libboost-dev protobuf-compiler libprotobuf-dev
      chromium                       # reproduce --report: the end-to-end test renders the page
      rt-app rt-tests linux-perf     # calibrate / validate run the real rt-app, hackbench, perf
      clang libclang-rt-14-dev)      # CI's sanitizer + libFuzzer step (scripts/ci-sanitize.sh)
# Node.js may come from elsewhere (this workplace's machines carry a newer one); Debian's otherwise.
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Vega, Vega-Lite and vega-embed, pinned; embedded into the binary at build time.
if [[ ! -d report/node_modules/vega-embed ]]; then
  npm ci --prefix report --no-audit --no-fund --loglevel=error
fi
