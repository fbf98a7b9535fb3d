#!/usr/bin/env python3
"""schedtwin's benchmark suite (issue 7): runs the five scenarios through the CLI and prints,
for each, wall time, simulated seconds per wall second, events per second, context
switches per second, messages per second where there are messages, and peak memory.

  bench/suite.py [--full] [--bin build/schedtwin] [--json FILE]

Quick scale (default) shortens the long scenarios; --full runs them as the issue states.
An event is one item taken off the engine's queue and dispatched (the runs' `events`)."""
import argparse, json, os, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
inputs = os.path.join(here, "inputs")


def scenarios(full):
    return [
        ("sched-idle fallback, rt-app, hikey, 5 s",
         ["rt-app", os.path.join(here, "..", "examples", "rt-app", "lkml", "sched-idle.json"), "--machine", "hikey",
          "--logdir", "{tmp}"]),
        ("messaging -g 20 -l {} xeon-e5-2650v4".format(40000 if full else 4000),
         ["messaging", "-g", "20", "-l", "40000" if full else "4000", "--machine", "xeon-e5-2650v4"]),
        ("messaging -g 256 -l {} thunderx2".format(1000 if full else 100),
         ["messaging", "-g", "256", "-l", "1000" if full else "100", "--machine", "thunderx2"]),
        ("4096 periodic rt-app tasks, 1024 CPUs, {} s".format(10 if full else 2),
         ["rt-app", os.path.join(inputs, "periodic-4096.json"), "--machine", os.path.join(inputs, "synthetic-1024.json"),
          "--duration", "10" if full else "2"]),
        ("100000 sleeping tasks, xeon-e5-2650v4, {} s".format(10 if full else 2),
         ["rt-app", os.path.join(inputs, "sleepers-100k.json"), "--machine", "xeon-e5-2650v4",
          "--duration", "10" if full else "2"]),
    ]


def run(binary, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = [binary] + [a.replace("{tmp}", tmp) for a in args] + ["--json", out]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        err = p.stderr.read().decode()
        if status != 0:
            sys.exit(f"{' '.join(cmd)} failed: {err}")
        j = json.load(open(out))
    sim = j.get("sim_time_s", 0.0)
    row = {"wall_s": wall, "sim_s": sim, "sim_s_per_wall_s": sim / wall, "events": j["events"],
           "events_per_s": j["events"] / wall, "context_switches_per_s": j.get("context_switches", 0) / wall,
           "peak_rss_mb": usage.ru_maxrss / 1024.0}
    if "messages" in j:
        row["messages_per_s"] = j["messages"] / wall
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "schedtwin"))
    ap.add_argument("--json")
    a = ap.parse_args()
    results = []
    print(f"{'scenario':<48} {'wall s':>8} {'sim s/s':>9} {'events/s':>10} {'switch/s':>10} {'msg/s':>10} {'RSS MB':>8}")
    for name, args in scenarios(a.full):
        r = run(a.bin, args)
        r["scenario"] = name
        results.append(r)
        msg = f"{r['messages_per_s'] / 1e6:9.2f}M" if "messages_per_s" in r else f"{'-':>10}"
        print(f"{name:<48} {r['wall_s']:8.2f} {r['sim_s_per_wall_s']:9.3f} {r['events_per_s'] / 1e6:9.2f}M "
              f"{r['context_switches_per_s'] / 1e6:9.2f}M {msg} {r['peak_rss_mb']:8.1f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"full": a.full, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
