// Bad inputs of every kind, end to end (SCHEDTWIN_BIN): rt-app task sets, machine files,
// sysfs snapshots and command lines. Each case runs the program in a directory of its own
// and expects
//   - the exit status: 2 for a usage error (the command line), 1 for bad input;
//   - exactly one line on stderr, "schedtwin: ...", naming the file and line:column, or the
//     option, and what was expected (the case gives a piece of that line);
//   - nothing left behind: the directory holds only the case's own input files afterwards
//     (no log directory, no --json / --out file, no temporary file, no rt-app logs in "./").
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

using schedtwin::testutil::slurp;

namespace fs = std::filesystem;

struct Case {
  std::string name;
  // Files to create before the run: path relative to the case directory -> content.
  std::vector<std::pair<std::string, std::string>> files;
  // The command line after the program name. {FIX} is the sysfs fixture directory.
  std::string args;
  int status;
  std::string expect;                  // a piece of the one stderr line; {FIX} as above
  std::vector<std::string> dirs = {};  // directories to create before the run
};

// A valid machine file (4 CPUs: 2 cores x SMT2, one LLC); variants below break one thing.
const std::string kMachine = R"({
  "version": 1,
  "name": "tiny",
  "topology": {"packages": 1, "cores_per_package": 2, "threads_per_core": 2,
               "numbering": "threads-adjacent"},
  "idle_states": [{"name": "C1", "exit_latency_ns": 1000, "target_residency_ns": 2000,
                   "real_exit_ns": 1000}],
  "costs": {"context_switch": {"ns": 1500}, "ipi": {"ns": 1000}, "idle_probe": {"ns": 45},
            "cache_cold": {"ns": 18000}, "wakeup": {"ns": 300}, "pipe_write": {"ns": 500},
            "pipe_read": {"ns": 400}, "socket_write": {"ns": 750}, "socket_read": {"ns": 600}},
  "kernel_build": {"hz": 250, "preempt": "voluntary", "nohz_idle": true}
}
)";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  if (at == std::string::npos) throw std::logic_error("no '" + from + "' in the base text");
  return s.replace(at, from.size(), to);
}

std::string substitute(std::string s) {
  const std::string fix = std::string(SCHEDTWIN_SOURCE_DIR) + "/tests/fixtures/sysfs";
  for (auto at = s.find("{FIX}"); at != std::string::npos; at = s.find("{FIX}"))
    s.replace(at, 5, fix);
  return s;
}

// A good task set: one thread, run 1 ms every 10 ms, for 1 s (used with bad options).
const std::string kGood =
    R"({"tasks": {"t": {"run": 1000, "timer": {"ref": "unique", "period": 10000}}}, "global": {"duration": 1}})";

// rt-app with every output: logs, --json.
std::string rtapp(const std::string& extra = "") {
  return "rt-app t.json --logdir logs --json out.json" + extra;
}

std::vector<Case> cases() {
  const std::string big_loop =
      "{\"tasks\": {\"t\": {\"run\": 1}}, \"global\": {\"duration\": 3600}}";
  std::vector<Case> c = {
      // ---- rt-app: malformed JSON at various places ----
      {"RtAppJsonUnterminatedObject",
       {{"t.json", R"({"tasks": {"t": {"run": 5}})"}},
       rtapp(),
       1,
       "t.json:1:28: syntax error while parsing object - unexpected end of input; expected '}'"},
      {"RtAppJsonMissingCommaOnLine3",
       {{"t.json", "{\n  \"tasks\": {\n    \"t\": {\"run\": 1000 \"sleep\": 5}\n  }\n}"}},
       rtapp(),
       1,
       "t.json:3:29: syntax error while parsing object - unexpected string literal; expected '}'"},
      {"RtAppJsonDoubleComma",
       {{"t.json", R"({"tasks": {"t": {"run": 1,, "sleep": 2}}})"}},
       rtapp(),
       1,
       "t.json:1:27: syntax error while parsing object key - unexpected ','; expected string "
       "literal"},
      {"RtAppJsonBadLiteral",
       {{"t.json", R"({"tasks": {"t": {"run": tru}}})"}},
       rtapp(),
       1,
       "t.json:1:28: syntax error while parsing value - invalid literal"},
      // Checked beside machine_fuzz's finding (MachineFileNumberOverflow): same message here.
      {"RtAppJsonNumberOverflow",
       {{"t.json", R"({"tasks": {"t": {"run": 1e400}}})"}},
       rtapp(),
       1,
       "t.json:1:29: number overflow parsing '1e400'"},
      {"RtAppJsonUnterminatedComment",
       {{"t.json", "{\"tasks\": {\"t\": {\"run\": 1}}} /* to do"}},
       rtapp(),
       1,
       "t.json:1:30: comment not closed; expected \"*/\""},
      {"RtAppJsonEmptyFile",
       {{"t.json", ""}},
       rtapp(),
       1,
       "t.json:1:1: syntax error while parsing value - unexpected end of input"},
      {"RtAppJsonTopLevelArray",
       {{"t.json", "[1, 2]"}},
       rtapp(),
       1,
       "t.json:1:1: expected an object with \"tasks\" and \"global\""},
      {"RtAppJsonNestedTooDeep",
       {{"t.json", "{\"tasks\": " + std::string(70, '[') + std::string(70, ']') + "}"}},
       rtapp(),
       1,
       "t.json:1:74: nesting deeper than 64 levels"},
      {"RtAppJsonFileTooLarge",
       {{"t.json", std::string((16u << 20) + 1, ' ')}},
       rtapp(),
       1,
       "t.json: file larger than 16777216 bytes (the limit for JSON input)"},
      // ---- rt-app: wrong types ----
      {"RtAppLoopIsAString",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "loop": "x"}}})"}},
       rtapp(),
       1,
       "t.json:1:28: \"loop\": expected an integer, found a string"},
      {"RtAppRunIsAString",
       {{"t.json", R"({"tasks": {"t": {"run": "fast"}}})"}},
       rtapp(),
       1,
       "t.json:1:18: \"run\": expected an integer, found a string"},
      {"RtAppTasksIsAnArray",
       {{"t.json", R"({"tasks": [{"run": 1}]})"}},
       rtapp(),
       1,
       "t.json:1:2: \"tasks\": expected an object"},
      {"RtAppTimerIsANumber",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "timer": 5}}})"}},
       rtapp(),
       1,
       "t.json:1:28: \"timer\": expected {\"ref\": name, \"period\": us}"},
      {"RtAppCpusIsANumber",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "cpus": 3}}})"}},
       rtapp(),
       1,
       "t.json:1:28: \"cpus\": expected an array of CPU numbers"},
      {"RtAppGlobalIsAString",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "global": "fast"})"}},
       rtapp(),
       1,
       "t.json:1:30: \"global\": expected an object"},
      // ---- rt-app: unknown keys and events ----
      {"RtAppUnknownEvent",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "jump": 5}}})"}},
       rtapp(),
       1,
       "t.json:1:28: unknown key \"jump\" in task t (expected an event: run, runtime, sleep, "
       "timer"},
      {"RtAppTaskgroupNotACgroupPath",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "taskgroup": "tg1"}}})"}},
       rtapp(),
       1,
       "t.json:1:28: \"taskgroup\": \"tg1\" is not a cgroup path such as \"/tg1\" or \"/tg1/sub\""},
      {"RtAppUnknownGlobalKey",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "global": {"durashun": 5}})"}},
       rtapp(),
       1,
       "t.json:1:41: unknown global key \"durashun\""},
      {"RtAppUnknownTopLevelKey",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "taks": {}})"}},
       rtapp(),
       1,
       "t.json:1:30: unknown top-level key \"taks\" (expected \"tasks\", \"global\")"},
      {"RtAppUnknownTimerKey",
       {{"t.json",
         R"({"tasks": {"t": {"run": 1, "timer": {"ref": "u", "period": 5, "perod": 3}}}})"}},
       rtapp(),
       1,
       "t.json:1:63: timer: unknown key \"perod\" (expected ref, period, mode)"},
      {"RtAppEventNotModelled",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "mem": 5}}})"}},
       rtapp(),
       1,
       "t.json:1:28: event \"mem\" is not modelled yet"},
      // ---- rt-app: zero, negative and enormous durations and periods ----
      {"RtAppTimerPeriodZero",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "timer": {"ref": "u", "period": 0}}}})"}},
       rtapp(),
       1,
       "t.json:1:50: \"period\": timer period must be positive, got 0"},
      {"RtAppTimerPeriodNegative",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "timer": {"ref": "u", "period": -7777}}}})"}},
       rtapp(),
       1,
       "t.json:1:50: \"period\": timer period must be positive, got -7777"},
      {"RtAppDurationZero",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "global": {"duration": 0}})"}},
       rtapp(),
       1,
       "t.json:1:41: \"duration\": must be positive, or -1 for no limit"},
      {"RtAppDurationNegative",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "global": {"duration": -5}})"}},
       rtapp(),
       1,
       "t.json:1:41: \"duration\": -5 is out of range [-1, 3600]"},
      {"RtAppDurationEnormous",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "global": {"duration": 1e12}})"}},
       rtapp(),
       1,
       "t.json:1:41: \"duration\": 1000000000000 is out of range [-1, 3600]"},
      {"RtAppRunEnormous",
       {{"t.json", R"({"tasks": {"t": {"run": 1e15}}})"}},
       rtapp(),
       1,
       "t.json:1:18: \"run\": 1000000000000000 is out of range [-1000000000, 1000000000]"},
      {"RtAppSleepNegative",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "sleep": -1}}})"}},
       rtapp(),
       1,
       "t.json:1:28: \"sleep\": -1 is out of range [0, 1000000000]"},
      {"RtAppDurationOptionZero",
       {{"t.json", kGood}},
       rtapp(" --duration 0"),
       2,
       "--duration: expected a number in [0.001, 3600], got '0'"},
      {"RtAppDurationOptionNaN",
       {{"t.json", kGood}},
       rtapp(" --duration nan"),
       2,
       "--duration: expected a number in [0.001, 3600], got 'nan'"},
      {"RtAppDurationOptionHex",
       {{"t.json", kGood}},
       rtapp(" --duration 0x10"),
       2,
       "--duration: expected a number in [0.001, 3600], got '0x10'"},
      {"RtAppDurationOptionNegative",
       {{"t.json", kGood}},
       rtapp(" --duration -1"),
       2,
       "--duration: expected a number in [0.001, 3600], got '-1'"},
      {"RtAppDurationOptionEnormous",
       {{"t.json", kGood}},
       rtapp(" --duration 1e12"),
       2,
       "--duration: expected a number in [0.001, 3600], got '1e12'"},
      // ---- rt-app: counts in the millions ----
      {"RtAppInstanceTenMillion",
       {{"t.json", R"({"tasks": {"t": {"instance": 10000000, "run": 1}}})"}},
       rtapp(),
       1,
       "t.json:1:18: \"instance\": 10000000 is out of range [0, 100000]"},
      {"RtAppThreadsOverTheLimit",
       {{"t.json",
         "{\"tasks\": {\"a\": {\"instance\": 60000, \"run\": 1},\n \"b\": {\"instance\": 60000, "
         "\"run\": 1}}}"}},
       rtapp(),
       1,
       "t.json:2:2: more than 100000 threads in the task set"},
      {"RtAppLoopFiveBillion",
       {{"t.json", R"({"tasks": {"t": {"loop": 5000000000, "run": 1}}})"}},
       rtapp(),
       1,
       "t.json:1:18: \"loop\": 5000000000 is out of range [-1, 1000000000]"},
      // 1 µs iterations for an hour: stopped at the log-row limit, before anything is written.
      {"RtAppTooManyLogRows",
       {{"t.json", big_loop}},
       rtapp(),
       1,
       "t.json: more than 4000000 log rows (loop iterations of all threads) in the run"},
      // ---- rt-app: structure, grammar, policies, CPUs ----
      {"RtAppMissingTasks",
       {{"t.json", R"({"global": {"duration": 1}})"}},
       rtapp(),
       1,
       "t.json:1:1: missing \"tasks\""},
      {"RtAppEmptyTasks",
       {{"t.json", R"({"tasks": {}})"}},
       rtapp(),
       1,
       "t.json:1:2: \"tasks\" is empty; expected at least one task"},
      {"RtAppPhaseWithoutEvents",
       {{"t.json", R"({"tasks": {"t": {"phases": {"p": {"loop": 3}, "q": {"run": 1}}}}})"}},
       rtapp(),
       1,
       "t.json:1:29: phase \"p\" of task \"t\" has no event"},
      {"RtAppLegacyGrammar",
       {{"t.json", R"({"tasks": {"t": {"exec": 5000, "period": 10000}}})"}},
       rtapp(),
       1,
       "t.json:1:18: task \"t\": \"exec\" belongs to the legacy pre-2014 rt-app grammar"},
      {"RtAppSchedFifo",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "policy": "SCHED_FIFO"}}})"}},
       rtapp(),
       1,
       "t.json:1:28: policy SCHED_FIFO is not modelled yet"},
      {"RtAppUnknownPolicy",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "policy": "SCHED_FAST"}}})"}},
       rtapp(),
       1,
       "t.json:1:28: unknown policy \"SCHED_FAST\" (expected SCHED_OTHER, SCHED_BATCH or "
       "SCHED_IDLE)"},
      {"RtAppCpuNotOnTheMachine",
       {{"t.json", R"({"tasks": {"t": {"run": 1, "cpus": [0, 8]}}})"}},
       rtapp(" --machine hikey"),
       1,
       "t.json:1:40: \"cpus\": CPU 8 does not exist on the machine (CPUs 0-7)"},
      {"RtAppCalibrationCpuNotOnTheMachine",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "global": {"calibration": "CPU9"}})"}},
       rtapp(),
       1,
       "t.json:1:41: \"calibration\": CPU9 does not exist (the machine has CPUs 0-7)"},
      // ---- rt-app: paths ----
      {"RtAppFileMissing", {}, rtapp(), 1, "t.json: cannot open file (No such file or directory)"},
      {"RtAppFileIsADirectory",
       {},
       rtapp(),
       1,
       "t.json: is a directory; expected a JSON file",
       {"t.json"}},
      {"RtAppFileLogdirIsARegularFile",
       {{"t.json", R"({"tasks": {"t": {"run": 1}}, "global": {"duration": 1, "logdir": "afile"}})"},
        {"afile", "x"}},
       "rt-app t.json --json out.json",
       1,
       "t.json: logdir \"afile\" is not a directory (rt-app needs an existing directory)"},
      {"RtAppFileLogdirMissing",
       {{"t.json",
         R"({"tasks": {"t": {"run": 1}}, "global": {"duration": 1, "logdir": "nowhere"}})"}},
       "rt-app t.json --json out.json",
       1,
       "t.json: logdir \"nowhere\" does not exist"},
      {"RtAppLogdirOptionIsARegularFile",
       {{"t.json", kGood}, {"afile", "x"}},
       "rt-app t.json --logdir afile --json out.json",
       1,
       "--logdir afile: exists and is not a directory"},
      {"RtAppLogdirOptionUnderARegularFile",
       {{"t.json", kGood}, {"afile", "x"}},
       "rt-app t.json --logdir afile/logs --json out.json",
       1,
       "--logdir afile/logs: afile is not a directory"},
      // Found by a fresh-user trial: a seed past 2^64 became 2^64 - 1, and an empty --json
      // path was taken as no --json at all.
      {"SeedBeyond64Bits",
       {{"t.json", kGood}},
       "rt-app t.json --logdir logs --seed 18446744073709551616",
       2,
       "--seed: expected an integer below 2^64, got '18446744073709551616'"},
      {"JsonEmptyPath",
       {{"t.json", kGood}},
       "rt-app t.json --logdir logs --json ''",
       2,
       "--json: expected a path, got ''"},
      {"RtAppLogdirOptionParentMissing",
       {{"t.json", kGood}},
       "rt-app t.json --logdir a/b/logs --json out.json",
       1,
       "--logdir a/b/logs: a/b does not exist (only the last directory is created)"},
      // Found by a fresh-user trial: the run failed only after writing its --trace.
      {"RtAppLogBasenameWithASlash",
       {{"t.json",
         R"({"tasks": {"t": {"run": 1}}, "global": {"duration": 1, "log_basename": "a/b"}})"}},
       "rt-app t.json --logdir logs --json out.json --trace t.pftrace",
       1,
       "t.json:1:56: \"log_basename\": expected a file name prefix (not empty, no '/')"},
      {"JsonAndFtraceInOneFile",
       {{"t.json", kGood}},
       "rt-app t.json --logdir logs --json out.json --ftrace ./out.json",
       2,
       "--json out.json and --ftrace ./out.json: one file for two outputs; expected different "
       "files"},
      {"RtAppJsonInAMissingDirectory",
       {{"t.json", kGood}},
       "rt-app t.json --logdir logs --json nodir/out.json",
       1,
       "--json nodir/out.json: directory nodir does not exist"},
      {"RtAppJsonIsADirectory",
       {{"t.json", kGood}},
       "rt-app t.json --logdir logs --json adir",
       1,
       "--json adir: is a directory; expected a file name",
       {"adir"}},
      {"RtAppJsonUnwritable",
       {{"t.json", kGood}},
       "rt-app t.json --logdir logs --json /proc/schedtwin.json",
       1,
       "--json /proc/schedtwin.json: cannot create a file in /proc"},
      // ---- unknown machine, profile and feature names ----
      {"UnknownMachine",
       {{"t.json", kGood}},
       rtapp(" --machine nosuch"),
       1,
       "--machine: unknown machine 'nosuch': not a preset (hikey, host, thunderx2, xeon-2s-88, "
       "xeon-e5-2650v4) nor a "
       "machine file"},
      {"UnknownKernelProfile",
       {{"t.json", kGood}},
       rtapp(" --kernel v9.9"),
       1,
       "--kernel: unknown kernel profile 'v9.9' (known: v5.3, v5.4"},
      {"UnknownFeature",
       {{"t.json", kGood}},
       rtapp(" --features SIS_PROP,NO_SUCH_FLAG"),
       1,
       "--features: unknown feature 'NO_SUCH_FLAG'"},
      {"UnknownMachineForDomains", {}, "machine domains nosuch", 1, "unknown machine 'nosuch'"},
      {"UnknownProfileForDomains",
       {},
       "machine domains hikey --kernel v1",
       1,
       "--kernel: unknown kernel profile 'v1'"},
      // ---- machine files ----
      {"MachineFileMalformed",
       {{"m.json", replaced(kMachine, "\"name\": \"tiny\",", "\"name\": \"tiny\"")}},
       "machine show m.json",
       1,
       "m.json:4:12: syntax error while parsing object - unexpected string literal"},
      {"MachineFileUnknownKey",
       {{"m.json",
         replaced(kMachine, "\"name\": \"tiny\",", "\"name\": \"tiny\", \"colour\": 1,")}},
       "machine show m.json",
       1,
       "m.json:3:19: colour: unknown key (expected one of: costs, description"},
      {"MachineFileWrongType",
       {{"m.json", replaced(kMachine, "\"hz\": 250", "\"hz\": \"fast\"")}},
       "machine show m.json",
       1,
       "m.json:11:20: kernel_build.hz: expected an integer, got \"fast\""},
      {"MachineFileMissingCost",
       {{"m.json", replaced(kMachine, "\"ipi\": {\"ns\": 1000}, ", "")}},
       "machine show m.json",
       1,
       "m.json:8:3: costs.ipi: missing"},
      {"MachineFileNegativeCost",
       {{"m.json", replaced(kMachine, "\"ns\": 300", "\"ns\": -300")}},
       "machine show m.json",
       1,
       "m.json:9:53: costs.wakeup.ns: negative time -300 ns (expected a non-negative integer)"},
      // Found by fuzz/machine_fuzz: costs and idle-state times up to INT64_MAX ns overflowed the
      // kernel model's sums (now + cost); a machine's times are at most 1 s.
      {"MachineFileCostOverOneSecond",
       {{"m.json", replaced(kMachine, "\"ns\": 300", "\"ns\": 9223372036854775807")}},
       "machine show m.json",
       1,
       "costs.wakeup.ns: cost 9223372036854775807 ns is over 10000000 ns (10 ms)"},
      {"MachineFileIdleExitOverOneSecond",
       {{"m.json", replaced(kMachine, "\"real_exit_ns\": 1000", "\"real_exit_ns\": 1000000001")}},
       "messaging -g 1 -l 1 --machine m.json",
       1,
       "idle_states[0].real_exit_ns: 1000000001 ns is over 1000000000 ns (1 s)"},
      // Found by fuzz/machine_fuzz: a number beyond a double escaped as json::out_of_range.
      {"MachineFileNumberOverflow",
       {{"m.json", replaced(kMachine, "\"hz\": 250", "\"hz\": 1e400")}},
       "machine show m.json",
       1,
       "m.json:11:30: number overflow parsing '1e400'"},
      {"MachineFileVersion2",
       {{"m.json", replaced(kMachine, "\"version\": 1", "\"version\": 2")}},
       "machine show m.json",
       1,
       "m.json:2:3: version: unsupported version 2 (this schedtwin reads version 1)"},
      {"MachineFileBillionCpus",
       {{"m.json", replaced(kMachine, "\"packages\": 1, \"cores_per_package\": 2",
                            "\"packages\": 1000, \"cores_per_package\": 1000000")}},
       "machine show m.json",
       1,
       "m.json:4:34: topology.cores_per_package: 1000000 is out of range [1, 4096]"},
      {"MachineFileTooManyCpus",
       {{"m.json", replaced(kMachine, "\"packages\": 1, \"cores_per_package\": 2",
                            "\"packages\": 64, \"cores_per_package\": 64")}},
       "machine show m.json",
       1,
       "m.json:4:3: topology: 64 x 64 x 2 = 8192 CPUs; at most 4096 are supported"},
      // A CPU in two cores: CPU 1 is CPU 0's SMT sibling (core 0) but in another LLC.
      {"MachineFileSmtSiblingsInTwoLlcs",
       {{"m.json",
         replaced(
             kMachine,
             "{\"packages\": 1, \"cores_per_package\": 2, \"threads_per_core\": 2,\n"
             "               \"numbering\": \"threads-adjacent\"}",
             "{\"cpus\": [\n  {\"id\": 0, \"core\": 0, \"llc\": 0, \"package\": 0, \"node\": 0},\n"
             "  {\"id\": 1, \"core\": 0, \"llc\": 1, \"package\": 0, \"node\": 0}]}")}},
       "machine show m.json",
       1,
       "m.json:6:24: topology.cpus[1].llc: SMT siblings CPU 0 and CPU 1 (core 0) are in different "
       "LLCs (0 and 1)"},
      {"MachineFileNodeMissing",
       {{"m.json",
         replaced(
             kMachine,
             "{\"packages\": 1, \"cores_per_package\": 2, \"threads_per_core\": 2,\n"
             "               \"numbering\": \"threads-adjacent\"}",
             "{\"cpus\": [\n  {\"id\": 0, \"core\": 0, \"llc\": 0, \"package\": 0, \"node\": 0},\n"
             "  {\"id\": 1, \"core\": 1, \"llc\": 0, \"package\": 0, \"node\": 1}]}")}},
       "machine show m.json",
       1,
       "m.json:6:48: topology.cpus[1].node: node 1 does not exist: no numa_distance is given, "
       "so the machine has one node (give a 2 x 2 matrix"},
      {"MachineFileIsADirectory",
       {},
       "machine show m.json",
       1,
       "m.json: cannot read machine file (not a regular file)",
       {"m.json"}},
      {"MachineFileForRtApp",
       {{"t.json", kGood}, {"m.json", replaced(kMachine, "\"hz\": 250", "\"hz\": 5000")}},
       rtapp(" --machine m.json"),
       1,
       "m.json:11:20: kernel_build.hz: 5000 is out of range [100, 1000]"},
      {"MachineFileForMessaging",
       {{"m.json", replaced(kMachine, "\"preempt\": \"voluntary\"", "\"preempt\": \"rt\"")}},
       "messaging -g 1 -l 1 --machine m.json --json out.json",
       1,
       "m.json:11:31: kernel_build.preempt: expected \"none\", \"voluntary\" or \"full\", got "
       "\"rt\""},
      // ---- scenario files (run) ----
      // Found by fuzz/scenario_fuzz: a workload's cross-option checks threw UsageError (exit 2,
      // naming no file); they are errors at the workload's arguments.
      {"ScenarioPingpongBadSize",
       {{"s.json",
         "{\"duration_s\": 1,\n \"workloads\": [{\"pingpong\": [\"--size\", \"8k&\"]}]}"}},
       "run s.json --json out.json",
       1,
       "s.json:2:17: pingpong arguments: --size 8k&: expected 1 to 1g bytes"},
      {"ScenarioSchbenchTooManyThreads",
       {{"s.json",
         "{\"duration_s\": 1,\n \"workloads\": [{\"schbench\": [\"-m\", \"1000\", \"-t\", "
         "\"1000\"]}]}"}},
       "run s.json",
       1,
       "s.json:2:17: schbench arguments: -m 1000 x -t 1000: 1001001 threads"},
      // A run's option among a workload's arguments used to be parsed and dropped.
      {"ScenarioWorkloadGivesTheKernel",
       {{"s.json",
         "{\"duration_s\": 1,\n \"workloads\": [{\"pingpong\": [\"--threads\", \"2\", "
         "\"--kernel\", \"v5.3\"]}]}"}},
       "run s.json --json out.json",
       1,
       "s.json:2:17: pingpong arguments: --kernel is an option of the whole run, not of one "
       "workload: set the file's \"kernel\" or give it to `schedtwin run`"},
      {"ScenarioIdleGroupWithWeight",
       {{"s.json",
         "{\"duration_s\": 1,\n \"groups\": {\"bg\": {\"cpu.idle\": 1, \"cpu.weight\": 50}},\n "
         "\"workloads\": [{\"group\": \"bg\", \"pingpong\": []}]}"}},
       "run s.json --json out.json",
       1,
       "s.json:2:35: group \"bg\": \"cpu.weight\" has no effect on a \"cpu.idle\" group (the "
       "kernel refuses it once the group is idle and overrides it when cpu.idle is set after "
       "it; an idle group's weight is the minimum)"},
      // ---- sysfs snapshots ----
      {"SysfsMissingFile",
       {},
       "machine capture --sysroot {FIX}/broken-missing-file --out cap.json",
       1,
       "{FIX}/broken-missing-file/sys/devices/system/cpu/cpu3/topology/core_id: missing or "
       "unreadable"},
      {"SysfsCpuInTwoCores",
       {},
       "machine capture --sysroot {FIX}/broken-two-cores --out cap.json",
       1,
       "thread_siblings_list: CPU 1 is listed in two cores (1,5 here, 1 in"},
      {"SysfsBadCpuList",
       {{"root/sys/devices/system/cpu/online", "0-x\n"}},
       "machine capture --sysroot root --out cap.json",
       1,
       "root/sys/devices/system/cpu/online: bad CPU list '0-x': bad CPU number 'x'"},
      {"SysfsHugeCpuList",
       {{"root/sys/devices/system/cpu/online", "0-1000000,0-1000000,2000000-2100000\n"}},
       "machine capture --sysroot root --out cap.json",
       1,
       "root/sys/devices/system/cpu/online: bad CPU list '0-1000000,0-1000000,2000000-2100000': "
       "more than 1048576 "
       "CPUs listed"},
      // Found by fuzz/capture_fuzz: a range ending at INT_MAX looped forever (signed overflow).
      {"SysfsCpuListEndsAtIntMax",
       {{"root/sys/devices/system/cpu/online", "2147483646-2147483647\n"}},
       "machine capture --sysroot root --out cap.json",
       1,
       "root/sys/devices/system/cpu/cpu2147483646/topology/core_id: missing or unreadable"},
      // Found by fuzz/capture_fuzz: latency (us) * 1000 overflowed.
      {"SysfsIdleLatencyHuge",
       {{"root/sys/devices/system/cpu/online", "0\n"},
        {"root/sys/devices/system/cpu/cpu0/topology/core_id", "0\n"},
        {"root/sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n"},
        {"root/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0\n"},
        {"root/sys/devices/system/cpu/cpu0/cpuidle/state0/name", "C1\n"},
        {"root/sys/devices/system/cpu/cpu0/cpuidle/state0/latency", "9223372036854775807\n"},
        {"root/sys/devices/system/cpu/cpu0/cpuidle/state0/residency", "1\n"}},
       "machine capture --sysroot root --out cap.json",
       1,
       "root/sys/devices/system/cpu/cpu0/cpuidle/state0/latency: 9223372036854775807 us is "
       "outside 0..1000000 us"},
      {"SysfsRootMissing",
       {},
       "machine capture --sysroot nowhere --out cap.json",
       1,
       "--sysroot nowhere: no such directory"},
      {"SysfsRootIsAFile",
       {{"afile", "x"}},
       "machine capture --sysroot afile --out cap.json",
       1,
       "--sysroot afile: is not a directory"},
      {"CaptureOutInAMissingDirectory",
       {},
       "machine capture --sysroot {FIX}/hikey-like --out nodir/cap.json",
       1,
       "--out nodir/cap.json: directory nodir does not exist"},
      {"CaptureOutIsADirectory",
       {},
       "machine capture --sysroot {FIX}/hikey-like --out adir",
       1,
       "--out adir: is a directory; expected a file name",
       {"adir"}},
      // ---- messaging, hackbench, reproduce: limits, conflicts, paths ----
      {"MessagingGroupsOverTheLimit",
       {},
       "messaging -g 20000 --json out.json",
       2,
       "--group: expected an integer in [1, 10000], got '20000'"},
      {"MessagingZeroLoops",
       {},
       "messaging -l 0 --json out.json",
       2,
       "--nr_loops: expected an integer in [1, "},
      {"MessagingNegativeLoops",
       {},
       "messaging -l -5 --json out.json",
       2,
       "--nr_loops: expected an integer in [1, "},
      // Found by a fresh-user trial: CLI::Range said "Value many not in range 1 to 10000".
      {"MessagingGroupsNotANumber",
       {},
       "messaging -g many --json out.json",
       2,
       "--group: expected an integer in [1, 10000], got 'many'"},
      {"MessagingBadFormat",
       {},
       "messaging --format fancy",
       2,
       "--format: fancy not in {default,simple}"},
      {"MessagingJsonIsADirectory",
       {},
       "messaging -g 1 -l 1 --json adir",
       1,
       "--json adir: is a directory; expected a file name",
       {"adir"}},
      {"HackbenchMillionTasks",
       {},
       "hackbench -g 10000 -f 100 --json out.json",
       2,
       "--groups 10000 x --fds 100: 2000000 tasks (2 x groups x fds) exceed the limit of 100000"},
      {"TraceCommEmpty",
       {},
       "messaging -g 1 -l 1 --ftrace out.txt --trace-comm \"\"",
       2,
       "--trace-comm: an empty comm; give comms as the trace shows them, separated by commas"},
      {"MessagingTooManyTasks",
       {},
       "messaging -g 10000 -l 1 --json out.json",
       2,
       "--group 10000: 400000 tasks (2 x groups x 20 fds) exceed the limit of 100000"},
      {"HackbenchTooManyMessages",
       {},
       "hackbench -g 100 -f 40 -l 2147483647 --json out.json",
       2,
       "--loops: 100 x 40 x 40 x 2147483647 = 3.436e+14 messages (groups x fds x fds x loops) "
       "exceed the limit of "
       "1e+10"},
      {"HackbenchThreadsAndProcesses",
       {},
       "hackbench -T -P --json out.json",
       2,
       "--threads excludes --process"},
      {"HackbenchSocketDatasize",
       {},
       "hackbench -s 4000 --json out.json",
       2,
       "--datasize 4000: above 3776 bytes a socket write is a paged skb"},
      {"ReproduceQuickAndFull",
       {},
       "reproduce --quick --full --json out.json",
       2,
       "--quick and --full exclude each other"},
      {"ReproduceRunsOverTheLimit",
       {},
       "reproduce --runs 1000000 --json out.json",
       2,
       "--runs: expected an integer in [1, 100], got '1000000'"},
      {"ReproduceUnknownSeries",
       {},
       "reproduce nosuch --json out.json",
       2,
       "series: unknown series 'nosuch'; expected one of sched-idle-fallback, latency-nice, "
       "runnable-avg, sched-idle-balancing, all"},
      // Found by a fresh-user trial: a typo got the whole list and no suggestion.
      {"ReproduceSeriesTypo",
       {},
       "reproduce latency-nise --json out.json",
       2,
       "series: unknown series 'latency-nise'; did you mean 'latency-nice'?"},
      {"ReproduceJobsZero",
       {},
       "reproduce --jobs 0 --json out.json",
       2,
       "--jobs: expected an integer in [1, 1024], got '0'"},
      {"ExplainEqualsNothing",
       {},
       "messaging -g 1 -l 10 --explain= --json out.json",
       2,
       "--explain=: expected a file name after '=' (--explain alone writes to stderr)"},
      {"ReproduceJsonInAMissingDirectory",
       {},
       "reproduce sched-idle-fallback --runs 1 --json nodir/out.json",
       1,
       "--json nodir/out.json: directory nodir does not exist"},
      {"ReproduceJsonAndReportInOneFile",
       {},
       "reproduce sched-idle-fallback --runs 1 --json out.json --report ./out.json",
       2,
       "--json out.json and --report ./out.json: one file for two outputs; expected different "
       "files"},
      {"FtraceToStandardOutput",
       {},
       "messaging -g 1 -l 10 --ftrace -",
       2,
       "--ftrace -: expected a file name (only --json writes to standard output)"},
      {"CalibrateOutToStandardOutput",
       {},
       "calibrate --quick --out -",
       2,
       "--out -: expected a file name"},
      // ---- command lines ----
      // No arguments at all print the help (CliUsage.NoArgumentsPrintTheHelpAndExitTwo).
      {"UnknownSubcommand",
       {},
       "frobnicate",
       2,
       "unknown subcommand 'frobnicate' (expected one of: reproduce, compare, rt-app, messaging"},
      {"UnknownMachineSubcommand",
       {},
       "machine frob",
       2,
       "machine: unknown subcommand 'frob' (expected one of: list, show"},
      {"UnknownOption",
       {{"t.json", kGood}},
       rtapp(" --bogus"),
       2,
       "rt-app: unknown option --bogus"},
      {"MistypedSubcommand",
       {},
       "mesaging -g 1",
       2,
       "schedtwin: unknown subcommand 'mesaging' (did you mean 'messaging'? expected one of: "},
      {"MistypedOption",
       {},
       "messaging --machin hikey",
       2,
       "messaging: unknown option --machin (did you mean --machine?); not expected: --machin "
       "hikey"},
      // Found by a fresh-user trial: CLI11 listed them in reverse ("10 -p").
      {"SchbenchOptionsNotModelled",
       {},
       "schbench -p 10 -r 1",
       2,
       "schbench: -p is an option of the real schbench that the model does not have (modelled: "
       "-m -t -r -s -c -C -w -i -z); not expected: -p 10"},
      {"HackbenchOptionNotModelled",
       {},
       "hackbench --inet -g 1",
       2,
       "hackbench: --inet is an option of the real hackbench that the model does not have"},
      {"CompareArgsOptionNotModelled",
       {},
       "compare --with v5.7 -- hackbench -F -g 1",
       2,
       "compare: hackbench ARGS: -F is an option of the real hackbench that the model does not "
       "have (modelled: -p -s -l -g -f -T -P)"},
      {"CompareArgsMistypedOption",
       {},
       "compare --with v5.7 -- messaging --grop 3",
       2,
       "compare: messaging ARGS: unknown option --grop (did you mean --group?); not expected: "
       "--grop 3"},
      {"CompareRunOptionBeforeTheSubcommand",
       {},
       "compare --runs 2 --machine xeon-e5-2650v4 --with NO_SIS_CORE -- messaging -g 1 -l 20",
       2,
       "compare: --machine is an option of the runs, not of compare: give it after \"--\" with "
       "the subcommand's arguments (e.g. compare --with NO_SIS_PROP -- messaging -g 4 --machine "
       "...)"},
      {"CompareKernelBeforeTheSubcommand",
       {},
       "compare --kernel v6.6 --with NO_SIS_CORE -- messaging -g 1 -l 20",
       2,
       "compare: --kernel is said by --base and --with, each a SPEC (a profile, then flags): "
       "e.g. --base v6.6 --with v6.6,NO_SIS_PROP"},
      {"RunHasNoDuration",
       {{"s.json", R"({"duration_s": 1, "workloads": [{"schbench": []}]})"}},
       "run s.json --duration 1",
       2,
       "run has no --duration: a scenario runs for its file's \"duration_s\""},
      // Found by a fresh-user trial: "schedtwin: taskset is required" named no subcommand.
      {"MissingTaskset",
       {},
       "rt-app --logdir logs",
       2,
       "rt-app: taskset is required (schedtwin rt-app --help says what it takes)"},
      {"SeedNotANumber", {{"t.json", kGood}}, rtapp(" --seed many"), 2, "--seed"},
      {"HzOutOfRange",
       {{"t.json", kGood}},
       rtapp(" --hz 5"),
       2,
       "--hz: expected an integer in [100, 1000], got '5'"},
      {"OptionWithoutValue",
       {{"t.json", kGood}},
       "rt-app t.json --logdir logs --machine",
       2,
       "--machine"},
      {"MachineWithoutSubcommand",
       {},
       "machine",
       2,
       "machine: a subcommand is required (one of: list, show"},
  };
  return c;
}

// Every path under dir, relative to it.
std::set<std::string> tree(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.insert(fs::relative(e.path(), dir).string());
  return out;
}

// gtest prints a failing case by its name, not as bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class CliBadInput : public ::testing::TestWithParam<Case> {};

TEST_P(CliBadInput, AnswersWithOneLineAndLeavesNothingBehind) {
  const Case& c = GetParam();
  // One directory per test process (ctest runs the cases in parallel) and per case.
  const fs::path base = fs::temp_directory_path() /
                        ("schedtwin_cli_bad_input_test-" + std::to_string(::getpid())) / c.name;
  const fs::path work = base / "work";
  fs::remove_all(base);
  fs::create_directories(work);
  for (const auto& [path, content] : c.files) {
    fs::create_directories((work / path).parent_path());
    std::ofstream(work / path, std::ios::binary) << content;
  }
  for (const std::string& d : c.dirs) fs::create_directories(work / d);
  const std::set<std::string> before = tree(work);

  const std::string cmd = "cd '" + work.string() + "' && " + SCHEDTWIN_BIN + " " +
                          substitute(c.args) + " >'" + (base / "stdout").string() + "' 2>'" +
                          (base / "stderr").string() + "'";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << cmd;
  const std::string err = slurp(base / "stderr");

  EXPECT_EQ(WEXITSTATUS(rc), c.status) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "not one line: " << err;
  EXPECT_TRUE(!err.empty() && err.back() == '\n') << err;
  EXPECT_EQ(err.rfind("schedtwin: ", 0), 0u) << err;
  const std::string expect = substitute(c.expect);
  EXPECT_NE(err.find(expect), std::string::npos) << "expected: " << expect << "\n     got: " << err;
  EXPECT_EQ(tree(work), before) << "files were left behind";
  EXPECT_FALSE(fs::exists("/proc/schedtwin.json.tmp"));
  if (!HasFailure()) {
    fs::remove_all(base);
    std::error_code ec;
    fs::remove(base.parent_path(), ec);  // the process's directory, once empty
  }
}

// No arguments: the help (its usage line and the subcommands) on stderr, exit status 2.
TEST(CliUsage, NoArgumentsPrintTheHelpAndExitTwo) {
  const std::string err = schedtwin::testutil::run_bin("", true).out;
  EXPECT_NE(err.find("Usage: schedtwin [OPTIONS] SUBCOMMAND"), std::string::npos) << err;
  EXPECT_NE(err.find("messaging"), std::string::npos) << err;
  EXPECT_EQ(schedtwin::testutil::run_bin("").rc, 2);
}

INSTANTIATE_TEST_SUITE_P(All, CliBadInput, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(CliBadInputTable, HasFortyCasesOrMoreWithDistinctNames) {
  const std::vector<Case> c = cases();
  std::set<std::string> names;
  for (const Case& x : c) names.insert(x.name);
  EXPECT_GE(c.size(), 40u);
  EXPECT_EQ(names.size(), c.size());
}

// Permissions stop only users other than root: these cases run when the tests do not.
TEST(CliBadInputPermissions, UnreadableTaskSetAndUnwritableDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads and writes whatever the permissions say";
  const fs::path dir = fs::temp_directory_path() /
                       ("schedtwin_cli_bad_input_test-" + std::to_string(::getpid())) /
                       "Permissions";
  fs::remove_all(dir);
  fs::create_directories(dir / "ro");
  std::ofstream(dir / "t.json") << kGood;
  std::ofstream(dir / "secret.json") << kGood;
  fs::permissions(dir / "secret.json", fs::perms::none);
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  const std::string cd = "cd '" + dir.string() + "' && " + SCHEDTWIN_BIN;
  const std::string err = (dir / "..").string() + "/permissions-stderr";
  int rc = std::system((cd + " rt-app secret.json --logdir logs 2>'" + err + "'").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_EQ(slurp(err), "schedtwin: secret.json: cannot open file (Permission denied)\n");
  rc =
      std::system((cd + " rt-app t.json --logdir logs --json ro/out.json 2>'" + err + "'").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_EQ(slurp(err),
            "schedtwin: --json ro/out.json: cannot create a file in ro (Permission denied)\n");
  EXPECT_FALSE(fs::exists(dir / "logs"));
  fs::permissions(dir / "ro", fs::perms::owner_all);
  fs::remove_all(dir);
  fs::remove(err);
}

// The base machine file and task set of the cases are themselves good: each case breaks
// exactly the one thing it names.
TEST(CliBadInputTable, TheBaseInputsAreGood) {
  const fs::path dir = fs::temp_directory_path() /
                       ("schedtwin_cli_bad_input_test-" + std::to_string(::getpid())) /
                       "TheBaseInputsAreGood";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "m.json") << kMachine;
  std::ofstream(dir / "t.json") << kGood;
  const std::string cd = "cd '" + dir.string() + "' && " + SCHEDTWIN_BIN;
  EXPECT_EQ(std::system((cd + " machine show m.json >/dev/null").c_str()), 0);
  EXPECT_EQ(
      std::system((cd +
                   " rt-app t.json --machine m.json --duration 0.1 --logdir logs --json out.json "
                   ">/dev/null")
                      .c_str()),
      0);
  EXPECT_TRUE(fs::exists(dir / "logs" / "rt-app-t-0.log"));
  EXPECT_TRUE(fs::exists(dir / "out.json"));
  fs::remove_all(dir);
  std::error_code ec;
  fs::remove(dir.parent_path(), ec);
}

}  // namespace
