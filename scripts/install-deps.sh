#!/usr/bin/env bash
# Installs the Debian 12 packages schedtwin builds and tests with. Run as root.
set -euo pipefail
pkgs=(g++ cmake make nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
      libbenchmark-dev libboost-dev protobuf-compiler libprotobuf-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
