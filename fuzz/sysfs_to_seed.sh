#!/bin/sh
# Writes a sysfs tree (<tree>/sys/devices/system/...) in capture_fuzz's input format on stdout:
# one "relative/path=content" line per file (content's first line), one "relative/path" line
# per empty directory. Usage: fuzz/sysfs_to_seed.sh tests/fixtures/sysfs/hikey-like > seed
set -eu
root=$1/sys/devices/system
cd "$root"
find . -type d -empty | sed 's|^\./||' | LC_ALL=C sort
find . -type f | sed 's|^\./||' | LC_ALL=C sort | while IFS= read -r f; do
  printf '%s=%s\n' "$f" "$(head -n 1 "$f")"
done
