#!/usr/bin/env python3
"""schedtwin's benchmark suite (issue 7): runs the five scenarios through the CLI and prints,
for each, wall time, simulated seconds per wall second, events per second, context
switches per second, messages per second where there are messages, and peak memory.

  bench/suite.py [--full | --smoke | --scaling] [--bin build/schedtwin] [--json FILE]

Quick scale (default) shortens the long scenarios; --full runs them as the issue states;
--smoke runs each at a size that takes a few seconds in all (the CI step that proves the
suite runs to completion; its figures are dominated by set-up and are not comparable).
Events per second count the model's events (the runs' `events`): those taken off the
engine's queue and dispatched, and the reads and socket writes messaging takes lazily, each
of which was one event before the lazy steps (5 December 2026). The next column counts the dispatched
ones alone (`dispatched_events`).

--scaling checks the issue's scaling targets instead, with benchmark 4's task mix (periodic
rt-app tasks at 5-60 % utilisation) on benchmark 4's machine and on its first 1, 2 and 4
nodes (128 CPUs each, one LLC per node): wall time against tasks x simulated time (1024 to
4096 tasks, 1 to 4 s, on 1024 CPUs), and wall time per event against the number of CPUs (4
tasks per CPU, 2 s). It prints each run's wall time, events, wall time per event (ns) and
per task and simulated second (µs)."""
import argparse, json, os, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
inputs = os.path.join(here, "inputs")


# Per scale: messaging -g 20 loops, messaging -g 256 loops, rt-app duration (s) of the
# sched-idle experiment (None: the file's 5 s), of the 4096-task and of the 100k-task runs.
SCALES = {
    "smoke": (40, 10, 0.2, 0.2, 0.2),
    "quick": (4000, 100, None, 2, 2),
    "full": (40000, 1000, None, 10, 10),
}


def scenarios(scale):
    l20, l256, idle_s, periodic_s, sleepers_s = SCALES[scale]
    idle_dur = ["--duration", str(idle_s)] if idle_s is not None else []
    return [
        ("sched-idle fallback, rt-app, hikey, {:g} s".format(idle_s if idle_s is not None else 5),
         ["rt-app", os.path.join(here, "..", "examples", "rt-app", "lkml", "sched-idle.json"), "--machine", "hikey",
          "--logdir", "{tmp}"] + idle_dur),
        ("messaging -g 20 -l {} xeon-e5-2650v4".format(l20),
         ["messaging", "-g", "20", "-l", str(l20), "--machine", "xeon-e5-2650v4"]),
        ("messaging -g 256 -l {} thunderx2".format(l256),
         ["messaging", "-g", "256", "-l", str(l256), "--machine", "thunderx2"]),
        ("4096 periodic rt-app tasks, 1024 CPUs, {:g} s".format(periodic_s),
         ["rt-app", os.path.join(inputs, "periodic-4096.json"), "--machine", os.path.join(inputs, "synthetic-1024.json"),
          "--duration", str(periodic_s)]),
        ("100000 sleeping tasks, xeon-e5-2650v4, {:g} s".format(sleepers_s),
         ["rt-app", os.path.join(inputs, "sleepers-100k.json"), "--machine", "xeon-e5-2650v4",
          "--duration", str(sleepers_s)]),
    ]


def synthetic_machine(nodes, tmp):
    """The first `nodes` nodes of benchmark 4's machine (64 cores x SMT2 each), as a file."""
    m = json.load(open(os.path.join(inputs, "synthetic-1024.json")))
    per_node = 64
    ncores = nodes * per_node
    m["name"] = f"synthetic-{2 * ncores}"
    m["description"] = f"First {nodes} node(s) of synthetic-1024 (bench/suite.py --scaling)"
    m["topology"]["cpus"] = [
        {"id": t * ncores + core, "core": core, "cluster": core // per_node, "llc": core // per_node,
         "package": core // per_node, "node": core // per_node, "capacity": 1024}
        for t in range(2) for core in range(ncores)]
    m["numa_distance"]["matrix"] = [row[:nodes] for row in m["numa_distance"]["matrix"][:nodes]]
    path = os.path.join(tmp, f"synthetic-{2 * ncores}.json")
    json.dump(m, open(path, "w"))
    return path


def periodic_tasks(per_kind, tmp):
    """Benchmark 4's four periodic task kinds, `per_kind` instances of each, as a file."""
    t = json.load(open(os.path.join(inputs, "periodic-4096.json")))
    for task in t["tasks"].values():
        task["instance"] = per_kind
    path = os.path.join(tmp, f"periodic-{4 * per_kind}.json")
    json.dump(t, open(path, "w"))
    return path


def scaling(binary):
    rows = []
    print(f"{'run':<42} {'wall s':>8} {'events':>12} {'ns/event':>9} {'µs/(task*s)':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        big = synthetic_machine(8, tmp)
        for per_kind, secs in [(256, 2), (512, 2), (1024, 1), (1024, 2), (1024, 4)]:
            runs.append((f"tasks x time: {4 * per_kind} tasks, 1024 CPUs, {secs} s", "tasks_time",
                         1024, 4 * per_kind, secs, big, periodic_tasks(per_kind, tmp)))
        for nodes in [1, 2, 4, 8]:
            cpus = 128 * nodes
            runs.append((f"CPUs: {cpus} CPUs, {4 * cpus} tasks, 2 s", "cpus", cpus, 4 * cpus, 2,
                         synthetic_machine(nodes, tmp), periodic_tasks(cpus, tmp)))
        for name, sweep, cpus, tasks, secs, machine, taskset in runs:
            r = run(binary, ["rt-app", taskset, "--machine", machine, "--duration", str(secs)])
            r.update({"run": name, "sweep": sweep, "cpus": cpus, "tasks": tasks, "duration_s": secs,
                      "ns_per_event": r["wall_s"] / r["events"] * 1e9,
                      "us_per_task_s": r["wall_s"] / (tasks * secs) * 1e6})
            rows.append(r)
            print(f"{name:<42} {r['wall_s']:8.2f} {r['events']:12d} {r['ns_per_event']:9.0f} "
                  f"{r['us_per_task_s']:12.2f}", flush=True)
    return rows


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
           "events_per_s": j["events"] / wall,
           "dispatched_events": j.get("dispatched_events", j["events"]),
           "dispatched_per_s": j.get("dispatched_events", j["events"]) / wall,
           "context_switches_per_s": j.get("context_switches", 0) / wall,
           "peak_rss_mb": usage.ru_maxrss / 1024.0}  # MiB (ru_maxrss is in KiB)
    if "messages" in j:
        row["messages_per_s"] = j["messages"] / wall
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    scale = ap.add_mutually_exclusive_group()
    scale.add_argument("--full", action="store_true", help="the issue's sizes")
    scale.add_argument("--smoke", action="store_true", help="tiny sizes: only proves every scenario runs")
    scale.add_argument("--scaling", action="store_true",
                       help="wall time against tasks x time and per event against CPUs (about 6 s)")
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "schedtwin"))
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.scaling:
        rows = scaling(a.bin)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"scaling": rows}, f, indent=2)
        return
    scale = "full" if a.full else "smoke" if a.smoke else "quick"
    results = []
    print(f"{'scenario':<48} {'wall s':>8} {'sim s/s':>9} {'events/s':>10} {'dispatch/s':>10} "
          f"{'switch/s':>10} {'msg/s':>10} {'RSS MiB':>8}")
    for name, args in scenarios(scale):
        r = run(a.bin, args)
        r["scenario"] = name
        results.append(r)
        msg = f"{r['messages_per_s'] / 1e6:9.2f}M" if "messages_per_s" in r else f"{'-':>10}"
        print(f"{name:<48} {r['wall_s']:8.2f} {r['sim_s_per_wall_s']:9.3f} {r['events_per_s'] / 1e6:9.2f}M "
              f"{r['dispatched_per_s'] / 1e6:9.2f}M {r['context_switches_per_s'] / 1e6:9.2f}M {msg} {r['peak_rss_mb']:8.1f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"full": a.full, "scale": scale, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
