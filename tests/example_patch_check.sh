#!/bin/sh
# ExamplePatch.YourIdeaAppliesToThisTree: examples/your-idea/ignore-wf-sync.patch must apply to
# this tree, or be applied already (someone following the README's guide). A tree whose
# uncommitted edits touch the patch's files (your own idea, added at the same lines) is skipped
# (exit 77) rather than failed: the clash is expected there, not a stale patch. Once such edits
# are committed the clash is a failure (exit 1), but its first line says what it likely is.
git="$1"
patch="$2"
"$git" apply --check "$patch" 2>/dev/null && exit 0
"$git" apply -R --check "$patch" 2>/dev/null && exit 0
files=$("$git" apply --numstat "$patch" | cut -f3)
# The patch's files that have uncommitted changes (a new file of the patch: only if it exists).
# shellcheck disable=SC2086
changed=$("$git" diff --name-only HEAD -- $files 2>/dev/null)
if [ -n "$changed" ]; then
  echo "skipped: uncommitted changes to $(echo "$changed" | tr '\n' ' ')touch the lines of the example patch"
  exit 77
fi
echo "the example patch $patch no longer applies to this tree (nor is it applied):" \
  "expected if you committed your own change at the same lines (see README.md," \
  "\"Trying your own idea\"); otherwise the patch is stale and must be refreshed" \
  "(examples/your-idea/README.md says how). git apply says:"
"$git" apply --check "$patch"
"$git" apply -R --check "$patch"
exit 1
