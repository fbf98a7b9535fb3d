#!/usr/bin/env python3
"""Generates the synthetic inputs of bench/suite.py (kept in bench/inputs/, regenerate with
this script). Nothing here is a measurement: the 1024-CPU machine copies the cost model and
idle states of the xeon-e5-2650v4 preset (whose sources that preset cites) onto a bigger
topology, so that only the scale changes."""
import json, subprocess, sys, os

here = os.path.dirname(os.path.abspath(__file__))
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "schedtwin")
base = json.loads(subprocess.check_output([binary, "machine", "show", "xeon-e5-2650v4", "--json"]))

# 8 nodes x 64 cores x SMT2 = 1024 CPUs, one LLC per node; x86 numbering (first threads of
# all cores, then their siblings).
nodes, cores_per_node, smt = 8, 64, 2
ncores = nodes * cores_per_node
cpus = []
for t in range(smt):
    for core in range(ncores):
        node = core // cores_per_node
        cpus.append({"id": t * ncores + core, "core": core, "cluster": node, "llc": node,
                     "package": node, "node": node, "capacity": 1024})
machine = dict(base)
machine["name"] = "synthetic-1024"
machine["description"] = "Synthetic benchmark machine: 8 nodes x 64 cores x SMT2 = 1024 CPUs (costs of xeon-e5-2650v4)"
machine["topology"] = {"source": "bench/gen_inputs.py: synthetic topology for the scale benchmark", "cpus": cpus}
machine["numa_distance"] = {"matrix": [[10 if a == b else 21 for b in range(nodes)] for a in range(nodes)],
                            "source": "bench/gen_inputs.py: one remote distance (21) for every pair of nodes"}
with open(os.path.join(here, "inputs", "synthetic-1024.json"), "w") as f:
    json.dump(machine, f, indent=1)

# 4096 periodic tasks at mixed utilisation (5 % to 60 %), 10 s.
tasks = {}
for i, (run, period) in enumerate([(500, 10000), (2000, 16000), (3000, 8000), (6000, 10000)]):
    tasks[f"periodic{i}"] = {"instance": 1024, "run": run, "timer": {"ref": "unique", "period": period}}
with open(os.path.join(here, "inputs", "periodic-4096.json"), "w") as f:
    json.dump({"tasks": tasks, "global": {"duration": 10, "default_policy": "SCHED_OTHER", "logdir": "./", "log_size": "disable"}}, f, indent=1)

# 100 000 mostly sleeping tasks: 50 us of work every second, 10 s. Together they ask for 5 CPUs,
# a tenth of the 48-CPU machine. (Until December 2026 the period was 100 ms: 50 CPUs of work
# on 48, an overloaded machine whose tasks spent most of their time runnable, not sleeping.)
with open(os.path.join(here, "inputs", "sleepers-100k.json"), "w") as f:
    json.dump({"tasks": {"sleeper": {"instance": 100000, "run": 50, "timer": {"ref": "unique", "period": 1000000}}},
               "global": {"duration": 10, "default_policy": "SCHED_OTHER", "logdir": "./", "log_size": "disable"}}, f, indent=1)
