#!/bin/sh
# ExamplePatch.YourIdeaAppliesToThisTree: examples/your-idea/ignore-wf-sync.patch must apply to
# this tree, or be applied already (someone following the README's guide). A tree whose
# uncommitted edits touch the patch's files (your own idea, added at the same lines) is skipped
# (exit 77) rather than failed: the clash is expected there, not a stale patch.
git="$1"
patch="$2"
"$git" apply --check "$patch" 2>/dev/null && exit 0
"$git" apply -R --check "$patch" 2>/dev/null && exit 0
files=$("$git" apply --numstat "$patch" | cut -f3)
# shellcheck disable=SC2086
if ! "$git" diff --quiet HEAD -- $files 2>/dev/null; then
  echo "skipped: uncommitted changes to $(echo $files | tr '\n' ' ')touch the lines of the example patch"
  exit 77
fi
"$git" apply --check "$patch"
"$git" apply -R --check "$patch"
exit 1
