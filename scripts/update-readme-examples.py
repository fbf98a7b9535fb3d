#!/usr/bin/env python3
"""Re-runs the README's examples and pastes what they print now.

The README's code blocks show real runs: a "$ COMMAND" line followed by its output, up to
the next "$ " line or the end of the block. tests/cli_readme_test.cpp re-runs the cheap ones
(messaging, hackbench, schbench, pingpong, machine, rt-app, features) and fails when the
output differs; after a deliberate change of results this script rewrites those outputs
instead of pasting them by hand. Commands run from the repository root through the shell,
with the built binary first on PATH as `schedtwin`. A shell command that follows a re-run
example in the same block (`$ head -3 /tmp/logs/...`) is re-run too.

Usage: scripts/update-readme-examples.py [--bin PATH] [--cheap] [--all] [LINE ...]
  --cheap   the examples the README test checks (seconds)
  --all     every example, also reproduce, compare and run (minutes)
  LINE      README.md line numbers of "$ " lines to re-run
Prints one line per example re-run, with its exit status, on stderr. The prose around an
example (figures quoted from it) is not touched: read it again.
"""
import argparse
import os
import subprocess
import sys
import tempfile

CHEAP = ("messaging ", "hackbench ", "schbench ", "pingpong ", "machine ", "rt-app ", "features ")


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(root, "build", "schedtwin"))
    ap.add_argument("--cheap", action="store_true")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("lines", nargs="*", type=int)
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        print(f"update-readme-examples: {args.bin}: not an executable (build first)", file=sys.stderr)
        return 1
    readme = os.path.join(root, "README.md")
    lines = open(readme, encoding="utf-8").read().split("\n")

    bindir = tempfile.mkdtemp(prefix="schedtwin-readme-")
    os.symlink(os.path.abspath(args.bin), os.path.join(bindir, "schedtwin"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    env.pop("SCHEDTWIN_CHECK", None)  # examples show what a user sees

    def wanted(number: int, command: str) -> bool:
        if args.all or number in args.lines:
            return True
        sub = command[len("schedtwin "):] if command.startswith("schedtwin ") else None
        return args.cheap and sub is not None and sub.startswith(CHEAP)

    out, i, in_block, previous_rerun = [], 0, False, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_block = not in_block
            previous_rerun = False
            out.append(line)
            i += 1
            continue
        if not (in_block and line.startswith("$ ")):
            out.append(line)
            i += 1
            continue
        command = line[2:]
        end = i + 1
        while end < len(lines) and not lines[end].startswith(("$ ", "```")):
            end += 1
        rerun = wanted(i + 1, command) or (previous_rerun and not command.startswith("schedtwin "))
        out.append(line)
        if rerun:
            r = subprocess.run(command, shell=True, cwd=root, env=env, capture_output=True, text=True)
            text = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout
            out.extend(text.split("\n") if text else [])
            print(f"README.md:{i + 1}: exit {r.returncode}: {command}", file=sys.stderr)
        else:
            out.extend(lines[i + 1:end])
        previous_rerun = rerun
        i = end
    with open(readme + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    os.replace(readme + ".tmp", readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
