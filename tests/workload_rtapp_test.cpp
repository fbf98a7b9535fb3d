// The rt-app front end: every example file's expected outcome, the relaxed JSON rules,
// and bad inputs with their one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/error.h"
#include "kernel_test_util.h"
#include "workload/json_relaxed.h"
#include "workload/rtapp.h"

using namespace schedtwin;
using namespace schedtwin::workload;

namespace {

const std::string kDir = std::string(SCHEDTWIN_SOURCE_DIR) + "/examples/rt-app/";

std::string error_of(const std::string& path) {
  try {
    rtapp::parse_file(path, 8);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

rtapp::Config parse_text(const std::string& text) {
  return rtapp::parse(parse_relaxed_json(text, "t.json"), "t.json", 8);
}

std::string error_text(const std::string& text) {
  try {
    parse_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RtAppExamples, EveryFileHasItsExpectedOutcome) {
  // file -> substring of the expected error ("" = parses)
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"lkml/sched-idle.json", ""},
      {"lkml/dietmar-eggemann-2019-08-01-dl-throttle-fragment.json.txt", ":1:1: syntax error"},
      {"ARM-software_workload-automation/taskset.json",
       "taskset.json:4:13: task \"ThreadA\": \"exec\" belongs to the legacy"},
      {"scheduler-tools_rt-app/cpufreq_governor_efficiency/calibration.json",
       "SCHED_FIFO is not modelled yet"},
      {"scheduler-tools_rt-app/cpufreq_governor_efficiency/dvfs.json",
       "SCHED_FIFO is not modelled yet"},
      {"scheduler-tools_rt-app/custom-slice.json", "\"dl-runtime\": SCHED_DEADLINE parameters"},
      {"scheduler-tools_rt-app/merge/global.json", "missing \"tasks\""},
      {"scheduler-tools_rt-app/merge/thread0.json", "legacy pre-2014"},
      {"scheduler-tools_rt-app/tutorial/example6.json", "event \"mem\" is not modelled yet"},
      {"scheduler-tools_rt-app/tutorial/example9.json",
       "example9.json:32:6: event \"fork\" is not modelled yet"},
  };
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kDir)) {
    std::string p = entry.path().string();
    if (!entry.is_regular_file() || p.find(".json") == std::string::npos) continue;
    std::string rel = p.substr(kDir.size());
    std::string want;
    bool listed = false;
    for (const auto& [f, e] : expected)
      if (f == rel) {
        want = e;
        listed = true;
      }
    std::string got = error_of(p);
    if (!listed && rel.find("merge/") != std::string::npos)
      want = rel.find("thread") != std::string::npos ? "legacy pre-2014" : "missing \"tasks\"";
    if (want.empty())
      EXPECT_EQ(got, "") << rel;
    else
      EXPECT_NE(got.find(want), std::string::npos) << rel << ": " << got;
    ++checked;
  }
  EXPECT_EQ(checked, 37);
}

TEST(RtAppParse, DuplicateKeysRunInFileOrder) {
  rtapp::Config c =
      parse_text(R"({"tasks": {"t": {"loop": 1, "run": 10, "sleep": 20, "run": 30}}})");
  const auto& ev = c.tasks[0].phases[0].events;
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].type, rtapp::EventType::Run);
  EXPECT_EQ(ev[0].us, 10);
  EXPECT_EQ(ev[1].type, rtapp::EventType::Sleep);
  EXPECT_EQ(ev[2].us, 30);
}

TEST(RtAppParse, CommentsTrailingCommasAndBareKeys) {
  rtapp::Config c = parse_text(
      "{ /* c */ \"tasks\": { // line\n \"t\": { \"suspend\", \"run\": 5, }, \"u\": {\"resume\": "
      "\"t\", "
      "\"run\": 1,},},}");
  ASSERT_EQ(c.tasks.size(), 2u);
  EXPECT_EQ(c.tasks[0].phases[0].events[0].type, rtapp::EventType::Suspend);
  EXPECT_EQ(c.tasks[1].phases[0].events[0].type, rtapp::EventType::Resume);
  EXPECT_EQ(c.tasks[0].phases[0].events[0].res, c.tasks[1].phases[0].events[0].res);
}

TEST(RtAppParse, EventsMatchByPrefixRuntimeBeforeRun) {
  rtapp::Config c = parse_text(
      R"({"tasks": {"t": {"runtime1": 5, "run_x": 6, "timer2": {"ref": "unique", "period": 9}}}})");
  const auto& ev = c.tasks[0].phases[0].events;
  EXPECT_EQ(ev[0].type, rtapp::EventType::Runtime);
  EXPECT_EQ(ev[1].type, rtapp::EventType::Run);
  EXPECT_EQ(ev[2].type, rtapp::EventType::Timer);
  EXPECT_TRUE(ev[2].unique_timer);
}

TEST(RtAppParse, LoopWithoutPhasesIsThePhaseLoop) {
  rtapp::Config c = parse_text(R"({"tasks": {"t": {"loop": 7, "run": 5}}})");
  EXPECT_EQ(c.tasks[0].loop, 1);
  EXPECT_EQ(c.tasks[0].phases[0].loop, 7);
}

TEST(RtAppParse, BadInputsGiveOneLineWithPosition) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"tasks\": {\"t\": {\"run\": 5}}",
       "t.json:1:28: syntax error while parsing object - unexpected end of input"},
      {"{\"tasks\": {\"t\": {\"rum\": 5}}}", "t.json:1:18: unknown key \"rum\""},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"timer\": {\"ref\": \"a\", \"period\": 0}}}}",
       "timer period must be positive"},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"timer\": {\"ref\": \"a\", \"period\": -5}}}}",
       "timer period must be positive"},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"policy\": \"SCHED_FOO\"}}}",
       "unknown policy \"SCHED_FOO\""},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"priority\": 25}}}",
       "\"priority\": 25 is out of range [-20, 19]"},
      {"{\"tasks\": {\"t\": {\"phases\": {\"p\": {\"run\": 5, \"priority\": -21}}}}}",
       "t.json:1:45: \"priority\": -21 is out of range [-20, 19]"},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"instance\": 5000000}}}",
       "t.json:1:28: \"instance\": 5000000 is out of range [0, 100000]"},
      {"{\"tasks\": {\"t\": {\"run\": 5}}, \"global\": {\"duration\": 0}}",
       "\"duration\": must be positive"},
      {"{\"tasks\": {\"t\": {\"run\": 5}}, \"global\": {\"duration\": 99999999}}",
       "\"duration\": 99999999 is out of range [-1, 3600]"},
      {"{\"tasks\": {\"t\": {\"run\": \"x\"}}}", "\"run\": expected an integer, found a string"},
      {"{\"tasks\": {\"t\": {\"cpus\": [9], \"run\": 1}}}",
       "t.json:1:27: \"cpus\": CPU 9 does not exist on the machine (CPUs 0-7)"},
      {"[1, 2]", "expected an object"},
  };
  for (const auto& [text, want] : cases) {
    std::string got = error_text(text);
    EXPECT_NE(got.find(want), std::string::npos) << text << " -> " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

// ---------------------------------------------------------------------------
// Ported from an earlier rt-app front end (its parser and runtime tests), with the expected
// values re-derived for this implementation.

namespace {

std::string json_error(const std::string& text) {
  try {
    parse_relaxed_json(text, "j.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

rtapp::Config parse_example(const std::string& rel) { return rtapp::parse_file(kDir + rel, 8); }

// A one-task file with `body` as the task object.
std::string task(const std::string& body, const std::string& global = "") {
  return R"({"tasks": {"t": )" + body + "}" + (global.empty() ? "" : ", \"global\": " + global) +
         "}";
}

}  // namespace

TEST(RelaxedJson, PositionsAreThoseOfTheOriginalText) {
  const JNode v = parse_relaxed_json(
      "{ /* block\n comment */ \"a\": 1, // line comment\n \"b\": [1, 2,],\n}", "j.json");
  ASSERT_EQ(v.members.size(), 2u);
  EXPECT_EQ(v.members[0].first, "a");
  EXPECT_EQ(v.members[0].second.i, 1);
  EXPECT_EQ(v.members[0].second.line, 2);  // a member is placed at its key's opening quote
  EXPECT_EQ(v.members[0].second.col, 13);
  const JNode& b = v.members[1].second;
  ASSERT_EQ(b.items.size(), 2u);
  EXPECT_EQ(b.line, 3);
  EXPECT_EQ(b.col, 2);
  EXPECT_EQ(b.items[0].col, 8);
  EXPECT_EQ(b.items[1].col, 11);
}

TEST(RelaxedJson, DuplicateKeysAreAllKeptInFileOrder) {
  const JNode v = parse_relaxed_json(R"({"run": 1, "sleep": 2, "run": 3, "run": 4})", "j.json");
  ASSERT_EQ(v.members.size(), 4u);
  EXPECT_EQ(v.members[2].first, "run");
  EXPECT_EQ(v.members[2].second.i, 3);
  EXPECT_EQ(v.members[3].second.i, 4);
}

TEST(RelaxedJson, BareKeyIsAMemberWithNullValue) {
  const JNode v = parse_relaxed_json("{\n\t\"suspend\",\n\t\"run\" : 5,\n\t\"last\"\n}", "j.json");
  ASSERT_EQ(v.members.size(), 3u);
  EXPECT_EQ(v.members[0].first, "suspend");
  EXPECT_EQ(v.members[0].second.kind, JNode::Kind::Null);
  EXPECT_EQ(v.members[0].second.line, 2);
  EXPECT_EQ(v.members[0].second.col, 2);
  EXPECT_EQ(v.members[1].second.i, 5);
  EXPECT_EQ(v.members[2].second.kind, JNode::Kind::Null);  // a bare key before '}' too
}

TEST(RelaxedJson, ErrorsGiveTheExactLineAndColumn) {
  EXPECT_EQ(json_error(R"({"a" 1})"),
            "j.json:1:6: syntax error while parsing object separator - unexpected number literal; "
            "expected ':'");
  EXPECT_EQ(json_error(R"({"a": })"),
            "j.json:1:7: syntax error while parsing value - unexpected '}'; expected '[', '{', or "
            "a literal");
  EXPECT_EQ(
      json_error("{\"a\":\n  [1,\n   2 3]}"),
      "j.json:3:6: syntax error while parsing array - unexpected number literal; expected ']'");
  EXPECT_EQ(json_error("[1,2"),
            "j.json:1:5: syntax error while parsing array - unexpected end of input; expected ']'");
  EXPECT_EQ(json_error(R"({"a":1,,})"),
            "j.json:1:8: syntax error while parsing object key - unexpected ','; expected string "
            "literal");
  // nlohmann reports the last character it read (here the '}' after "tru").
  EXPECT_EQ(
      json_error(R"({"a": tru})"),
      "j.json:1:10: syntax error while parsing value - invalid literal; last read: '\"a\": tru}'");
  EXPECT_EQ(json_error(""),
            "j.json:1:1: syntax error while parsing value - unexpected end of input; expected '[', "
            "'{', or a literal");
  // The inserted ":null" of a bare key does not move positions after it.
  EXPECT_EQ(json_error(R"({"suspend", "x" 1})"),
            "j.json:1:17: syntax error while parsing object separator - unexpected number literal; "
            "expected ':'");
  // Columns count characters: "é" is two bytes, one column.
  EXPECT_EQ(json_error("{\"\xC3\xA9\": tru}"),
            "j.json:1:10: syntax error while parsing value - invalid literal; last read: "
            "'\"\xC3\xA9\": tru}'");
}

TEST(RelaxedJson, LimitsGiveAClearError) {
  const std::string deep = std::string(70, '[') + std::string(70, ']');
  EXPECT_EQ(json_error(deep), "j.json:1:65: nesting deeper than 64 levels");
  EXPECT_EQ(json_error(std::string(kMaxJsonBytes + 1, ' ')),
            "j.json: file larger than 16777216 bytes (the limit for JSON input)");
  std::string many = "[0";
  for (std::size_t i = 0; i < kMaxJsonValues; ++i) many += ",0";
  many += "]";
  EXPECT_EQ(json_error(many), "j.json:1:2000000: more than 1000000 JSON values in the file");
}

TEST(RelaxedJson, UnreadableFiles) {
  auto error_reading = [](const std::string& path) {
    try {
      read_relaxed_json_file(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_reading("/nonexistent/x.json"),
            "/nonexistent/x.json: cannot open file (No such file or directory)");
  EXPECT_EQ(
      error_reading(std::filesystem::temp_directory_path().string()),
      std::filesystem::temp_directory_path().string() + ": is a directory; expected a JSON file");
}

TEST(RtAppExamples, SchedIdleJson) {
  const rtapp::Config c = parse_example("lkml/sched-idle.json");
  EXPECT_EQ(c.nr_threads, 13);
  EXPECT_EQ(c.duration_s, 5);
  EXPECT_EQ(c.pload_ns, rtapp::kSimulatedPLoadNs);  // "CPU0": calibration is not simulated
  EXPECT_TRUE(c.logs);                              // "logsize": 4 is not an rt-app key
  EXPECT_EQ(c.log_basename, "rt-app");
  ASSERT_EQ(c.tasks.size(), 2u);
  const rtapp::TaskDesc& cfs = c.tasks[0];
  EXPECT_EQ(cfs.name, "cfs_thread");
  EXPECT_EQ(cfs.instance, 8);
  EXPECT_EQ(cfs.policy, kernel::Policy::Normal);
  EXPECT_EQ(cfs.loop, -1);
  ASSERT_EQ(cfs.phases.size(), 1u);
  EXPECT_EQ(cfs.phases[0].loop, 1);
  const auto& ev = cfs.phases[0].events;
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, rtapp::EventType::Run);
  EXPECT_EQ(ev[0].us, 5333);
  EXPECT_EQ(ev[1].type, rtapp::EventType::Timer);
  EXPECT_EQ(ev[1].us, 7777);
  EXPECT_TRUE(ev[1].unique_timer);
  EXPECT_FALSE(ev[1].absolute);
  EXPECT_TRUE(cfs.has_timer);
  EXPECT_EQ(c.tasks[1].name, "idle_thread");
  EXPECT_EQ(c.tasks[1].instance, 5);
  EXPECT_EQ(c.tasks[1].policy, kernel::Policy::Idle);
}

TEST(RtAppExamples, BrowserShortKeepsDuplicateEventsInOrder) {
  const rtapp::Config c = parse_example("scheduler-tools_rt-app/browser-short.json");
  EXPECT_EQ(c.duration_s, 6);
  EXPECT_EQ(c.log_basename, "web");
  ASSERT_EQ(c.tasks.size(), 9u);
  const rtapp::TaskDesc& main = c.tasks[0];
  EXPECT_EQ(main.name, "BrowserMain");
  EXPECT_EQ(main.loop, 3);
  ASSERT_EQ(main.phases.size(), 7u);
  const rtapp::Phase& start = main.phases[0];
  EXPECT_EQ(start.name, "start");
  ASSERT_EQ(start.events.size(), 5u);
  const std::vector<std::pair<rtapp::EventType, std::int64_t>> want = {
      {rtapp::EventType::Sleep, 400000},
      {rtapp::EventType::Run, 15000},
      {rtapp::EventType::Resume, 0},
      {rtapp::EventType::Run, 7000},
      {rtapp::EventType::Sleep, 8000}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(start.events[i].type, want[i].first) << i;
    EXPECT_EQ(start.events[i].us, want[i].second) << i;
  }
  EXPECT_EQ(c.conds[static_cast<std::size_t>(start.events[2].res)], "Browser");
  EXPECT_EQ(main.phases[1].loop, 50);
  const rtapp::TaskDesc& disp = c.tasks[3];
  EXPECT_EQ(disp.name, "BrowserDisplay");
  EXPECT_EQ(disp.nice, -6);
  const auto& de = disp.phases[0].events;
  ASSERT_EQ(de.size(), 10u);
  EXPECT_EQ(de[5].type, rtapp::EventType::Sync);
  EXPECT_EQ(c.conds[static_cast<std::size_t>(de[5].res)], "queue11");
  EXPECT_EQ(c.mutexes[static_cast<std::size_t>(de[5].res2)], "mutex11");
  EXPECT_EQ(de[9].us, 400);
}

TEST(RtAppExamples, VideoShortBareSuspendNamesTheTask) {
  const rtapp::Config c = parse_example("scheduler-tools_rt-app/video-short.json");
  EXPECT_EQ(c.tasks[0].name, "surfaceflinger");
  EXPECT_EQ(c.tasks[0].phases[0].events[0].type, rtapp::EventType::Suspend);
  EXPECT_EQ(c.conds[static_cast<std::size_t>(c.tasks[0].phases[0].events[0].res)],
            "surfaceflinger");
  EXPECT_EQ(c.tasks[1].name, "DispSync");
  EXPECT_EQ(c.conds[static_cast<std::size_t>(c.tasks[1].phases[0].events[0].res)], "DispSync");
  const rtapp::Event& timer = c.tasks[2].phases[0].events[2];
  EXPECT_EQ(timer.type, rtapp::EventType::Timer);
  EXPECT_EQ(c.timers[static_cast<std::size_t>(timer.res)], "timerA");
  EXPECT_FALSE(timer.unique_timer);
}

TEST(RtAppExamples, SpreadingTasksKeepsTheDuplicatePhase) {
  const rtapp::Config c = parse_example("scheduler-tools_rt-app/spreading-tasks.json");
  const rtapp::TaskDesc& t2 = c.tasks[1];
  ASSERT_EQ(t2.phases.size(), 4u);
  EXPECT_EQ(t2.phases[0].name, "light1");
  EXPECT_EQ(t2.phases[1].name, "heavy1");
  EXPECT_EQ(t2.phases[2].name, "light2");
  EXPECT_EQ(t2.phases[3].name, "heavy1");
  EXPECT_EQ(t2.phases[0].loop, 900);
  EXPECT_EQ(t2.phases[3].loop, 600);
  EXPECT_EQ(t2.loop, -1);
}

TEST(RtAppExamples, TutorialDefaultsAndLoops) {
  // example3: no "global": rt-app's defaults.
  const rtapp::Config e3 = parse_example("scheduler-tools_rt-app/tutorial/example3.json");
  EXPECT_EQ(e3.duration_s, -1);
  EXPECT_EQ(e3.logdir, "./");
  EXPECT_EQ(e3.log_basename, "rt-app");
  EXPECT_TRUE(e3.logs);
  EXPECT_EQ(e3.nr_threads, 12);
  EXPECT_EQ(e3.tasks[0].loop, 1);
  EXPECT_EQ(e3.tasks[0].phases[1].name, "heavy");
  EXPECT_EQ(e3.tasks[0].phases[1].loop, 10);

  // example5: a task without phases but with "loop": 3 runs its one phase 3 times, once.
  const rtapp::Config e5 = parse_example("scheduler-tools_rt-app/tutorial/example5.json");
  const rtapp::TaskDesc& t1 = e5.tasks[1];
  EXPECT_EQ(t1.loop, 1);
  EXPECT_EQ(t1.phases[0].loop, 3);
  ASSERT_EQ(t1.phases[0].events.size(), 8u);
  EXPECT_EQ(t1.phases[0].events[1].type, rtapp::EventType::Wait);
  EXPECT_EQ(e5.conds[static_cast<std::size_t>(t1.phases[0].events[1].res)], "queue");
  EXPECT_EQ(e5.mutexes[static_cast<std::size_t>(t1.phases[0].events[1].res2)], "mutex");
  EXPECT_EQ(t1.phases[0].events[4].type, rtapp::EventType::Suspend);
  EXPECT_EQ(t1.nice, -19);
  EXPECT_EQ(t1.cpus, std::vector<int>{1});

  // example7: "runtime1" is a runtime event, "sleep1" a sleep, "barrier1" a barrier.
  const rtapp::Config e7 = parse_example("scheduler-tools_rt-app/tutorial/example7.json");
  const auto& ev = e7.tasks[0].phases[0].events;
  EXPECT_EQ(ev[0].type, rtapp::EventType::Runtime);
  EXPECT_EQ(ev[1].type, rtapp::EventType::Sleep);
  EXPECT_EQ(ev[2].type, rtapp::EventType::Barrier);
  EXPECT_EQ(e7.barriers[static_cast<std::size_t>(ev[2].res)], "FIRST");
  EXPECT_EQ(e7.barrier_users[static_cast<std::size_t>(ev[2].res)], 2);

  // example8: task cpus and phase cpus.
  const rtapp::Config e8 = parse_example("scheduler-tools_rt-app/tutorial/example8.json");
  EXPECT_EQ(e8.tasks[0].cpus, std::vector<int>{2});
  EXPECT_EQ(e8.tasks[0].phases[0].cpus, std::optional<std::vector<int>>(std::vector<int>{0}));
  EXPECT_EQ(e8.tasks[0].phases[1].cpus, std::optional<std::vector<int>>(std::vector<int>{1}));
  EXPECT_FALSE(e8.tasks[0].phases[2].cpus.has_value());

  // example10: the taskgroup is kept.
  EXPECT_EQ(parse_example("scheduler-tools_rt-app/tutorial/example10.json").tasks[0].taskgroup,
            "/tg1");
}

TEST(RtAppParse, EventsAreMatchedByPrefixInRtAppsOrder) {
  const rtapp::Config c =
      parse_text(task(R"({"runtime5": 10, "run_x": 20, "runner": 30, "sleep_a": 1,
      "broadcast": "c", "signal2": "c", "yield": "", "barrier": "b", "unlock": "m", "lock": "m", "loop": 2})"));
  using T = rtapp::EventType;
  const std::vector<T> want = {T::Runtime, T::Run,   T::Run,     T::Sleep,  T::Broad,
                               T::Signal,  T::Yield, T::Barrier, T::Unlock, T::Lock};
  const auto& ev = c.tasks[0].phases[0].events;
  ASSERT_EQ(ev.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(ev[i].type, want[i]) << i;
  EXPECT_EQ(c.tasks[0].phases[0].loop, 2);
  EXPECT_EQ(c.tasks[0].loop, 1);
}

TEST(RtAppParse, LoopRules) {
  // No phases, no loop: the thread loops forever over one iteration of its events.
  rtapp::Config c = parse_text(task(R"({"run": 1})"));
  EXPECT_EQ(c.tasks[0].loop, -1);
  EXPECT_EQ(c.tasks[0].phases[0].loop, 1);
  // Phases without a task loop: forever; phase loop default 1.
  c = parse_text(task(R"({"phases": {"a": {"run": 1}, "b": {"loop": 4, "run": 2}}})"));
  EXPECT_EQ(c.tasks[0].loop, -1);
  EXPECT_EQ(c.tasks[0].phases[0].loop, 1);
  EXPECT_EQ(c.tasks[0].phases[1].loop, 4);
  // Phases with a task loop.
  c = parse_text(task(R"({"loop": 7, "phases": {"a": {"run": 1}}})"));
  EXPECT_EQ(c.tasks[0].loop, 7);
  // A phase's priority is accepted and ignored; the task's nice value stays.
  c = parse_text(task(R"({"priority": -5, "phases": {"a": {"priority": 3, "run": 1}}})"));
  EXPECT_EQ(c.tasks[0].nice, -5);
}

TEST(RtAppParse, GlobalKeys) {
  rtapp::Config c = parse_text(task(R"({"run": 1})", R"({"calibration": 150, "log_size": 2,
      "default_policy": "SCHED_BATCH", "cumulative_slack": true, "ftrace": "main,stats", "frag": 1,
      "logsize": 9, "io_device": "/dev/null", "mem_buffer_size": 1024, "pi_enabled": true})"));
  EXPECT_EQ(c.pload_ns, 150);
  EXPECT_TRUE(c.logs);
  EXPECT_EQ(c.tasks[0].policy, kernel::Policy::Batch);
  EXPECT_TRUE(c.cumulative_slack);
  c = parse_text(task(R"({"run": 1})", R"({"calibration": "CPU7", "log_size": "disable"})"));
  EXPECT_EQ(c.pload_ns, rtapp::kSimulatedPLoadNs);
  EXPECT_FALSE(c.logs);
  c = parse_text(task(R"({"run": 1})", R"({"log_size": "auto"})"));
  EXPECT_TRUE(c.logs);
}

// Every bad input of the earlier front end's tests that still applies, with this parser's
// message: the file, line:column of the value (or its key) and what was expected.
TEST(RtAppParse, BadInputsOfTheEarlierParser) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // malformed JSON
      {"{\n  \"tasks\": {\n    \"t\": {\"run\": 1000 \"sleep\": 5}\n  }\n}",
       "t.json:3:29: syntax error while parsing object - unexpected string literal; expected '}'"},
      {R"({"tasks": {"t": {"run": }}})",
       "t.json:1:25: syntax error while parsing value - unexpected '}'; expected '[', '{', or a "
       "literal"},
      {"[1]", "t.json:1:1: expected an object with \"tasks\" and \"global\""},
      // events with the wrong value
      {task(R"({"run": "fast"})"), "t.json:1:18: \"run\": expected an integer, found a string"},
      // rt-app checks json_type_int: a fraction is refused, not truncated (found by a
      // fresh-user trial: "duration": 0.1 said "must be positive").
      {task(R"({"run": 100.5})"), "t.json:1:18: \"run\": expected an integer, found 100.5"},
      {R"({"tasks": {"t": {"run": 1}}, "global": {"duration": 0.1}})",
       "t.json:1:41: \"duration\": expected an integer, found 0.1"},
      {task(R"({"run": 1, "lock_pages": false})"),
       "t.json:1:28: \"lock_pages\": expected a string, found a boolean"},
      {task(R"({"run": 1, "mem_buffer_size": 4})"),
       "t.json:1:28: event \"mem_buffer_size\" is not modelled yet"},
      {task(R"({"iorun": 5})"), "t.json:1:18: event \"iorun\" is not modelled yet"},
      {task(R"({"memrun": {"size": 5}})"), "t.json:1:18: event \"memrun\" is not modelled yet"},
      {task(R"({"run": 1, "sem_post": "s"})"),
       "t.json:1:28: event \"sem_post\" is not modelled yet"},
      {task(R"({"run": 1, "fork": "t"})"), "t.json:1:28: event \"fork\" is not modelled yet"},
      // unknown keys
      {task(R"({"run": 1, "jump": 5})"),
       "t.json:1:28: unknown key \"jump\" in task t (expected an event: run, runtime, sleep, "
       "timer, lock, unlock, "
       "wait, signal, broad, sync, barrier, suspend, resume, yield)"},
      {task(R"({"phases": {"p": {"run": 1, "delay": 5}}})"),
       "t.json:1:45: unknown key \"delay\" in phase p"},
      {task(R"({"run": 1})", R"({"durat": 5})"), "t.json:1:41: unknown global key \"durat\""},
      {R"({"tasks": {"t": {"run": 1}}, "other": 1})",
       "t.json:1:30: unknown top-level key \"other\" (expected \"tasks\", \"global\")"},
      {task(R"({"run": 1, "timer": {"ref": "a", "period": 5, "perod": 3}})"),
       "t.json:1:63: timer: unknown key \"perod\" (expected ref, period, mode)"},
      // timers
      {task(R"({"run": 1, "timer": {"ref": "unique", "period": 0}})"),
       "t.json:1:55: \"period\": timer period must be positive, got 0"},
      {task(R"({"run": 1, "timer": {"ref": "unique", "period": -100}})"),
       "t.json:1:55: \"period\": timer period must be positive, got -100"},
      {task(R"({"run": 1, "timer": {"ref": "unique"}})"),
       "t.json:1:28: \"timer\": missing \"period\""},
      {task(R"({"timer": {"ref": "x", "period": 5, "mode": "abs"}})"),
       "t.json:1:53: \"mode\": expected \"relative\" or \"absolute\""},
      // policies and priorities
      {task(R"({"run": 1, "policy": "SCHED_FOO"})"),
       "t.json:1:28: unknown policy \"SCHED_FOO\" (expected SCHED_OTHER, SCHED_BATCH or "
       "SCHED_IDLE)"},
      {task(R"({"run": 1, "policy": "SCHED_RR"})"),
       "t.json:1:28: policy SCHED_RR is not modelled yet"},
      {task(R"({"phases": {"p": {"policy": "SCHED_DEADLINE", "run": 1}}})"),
       "t.json:1:35: policy SCHED_DEADLINE is not modelled yet"},
      {task(R"({"phases": {"p": {"policy": "SCHED_IDLE", "run": 1}}})"),
       "t.json:1:35: a phase that changes the policy is not modelled yet"},
      {task(R"({"run": 1, "priority": 20})"),
       "t.json:1:28: \"priority\": 20 is out of range [-20, 19]"},
      {task(R"({"run": 1, "priority": -21})"),
       "t.json:1:28: \"priority\": -21 is out of range [-20, 19]"},
      {task(R"({"run": 1, "dl-runtime": 100})"),
       "t.json:1:28: \"dl-runtime\": SCHED_DEADLINE parameters and custom slices are not modelled "
       "yet"},
      // limits
      {task(R"({"instance": 2000000, "run": 1})"),
       "t.json:1:18: \"instance\": 2000000 is out of range [0, 100000]"},
      {"{\"tasks\": {\"a\": {\"instance\": 60000, \"run\": 1},\n \"b\": {\"instance\": 60000, "
       "\"run\": 1}}}",
       "t.json:2:2: more than 100000 threads in the task set"},
      {task(R"({"instance": -1, "run": 1})"),
       "t.json:1:18: \"instance\": -1 is out of range [0, 100000]"},
      {task(R"({"run": 1})", R"({"duration": 4000})"),
       "t.json:1:41: \"duration\": 4000 is out of range [-1, 3600]"},
      {task(R"({"run": 2000000000})"),
       "t.json:1:18: \"run\": 2000000000 is out of range [-1000000000, 1000000000]"},
      {task(R"({"loop": 5000000000, "run": 1})"),
       "t.json:1:18: \"loop\": 5000000000 is out of range [-1, 1000000000]"},
      // structure
      {task(R"({"run": 1, "phases": {"p": {"run": 1}}})"),
       "t.json:1:12: task \"t\": events beside \"phases\""},
      {task(R"({"phases": {"p": {"loop": 3}, "q": {"run": 1}}})"),
       "t.json:1:29: phase \"p\" of task \"t\" has no event"},
      {task(R"({"loop": 3})"), "t.json:1:12: task \"t\" has no event"},
      {task(R"({"instance": 0, "run": 1})"),
       "t.json:1:2: no thread to run (every instance count is 0)"},
      {R"({"tasks": {}})", "t.json:1:2: \"tasks\" is empty; expected at least one task"},
      {task(R"({"cpus": [], "run": 1})"), "t.json:1:18: \"cpus\": empty affinity"},
      {task(R"({"run": 1})", R"({"calibration": "GPU0"})"),
       "t.json:1:41: \"calibration\": expected \"CPUn\" or ns per loop"},
      {task(R"({"run": 1})", R"({"calibration": "CPU8"})"),
       "t.json:1:41: \"calibration\": CPU8 does not exist (the machine has CPUs 0-7)"},
      {task(R"({"exec": 5000, "period": 10000})"),
       "t.json:1:18: task \"t\": \"exec\" belongs to the legacy pre-2014 rt-app grammar"},
  };
  for (const auto& [text, want] : cases) {
    const std::string got = error_text(text);
    EXPECT_EQ(got.substr(0, want.size()), want) << text;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

// ---------------------------------------------------------------------------
// Threads on the kernel model: log rows hand-worked from rt-app's rules on machines with
// zero costs (no context-switch, wakeup, IPI or idle-exit cost), where a sleeping CFS thread
// wakes exactly its 50 µs timer slack after the programmed time.

namespace {

// Parses `json`, runs it on `m` until `end` (the file's duration when kTimeNever) and keeps
// everything alive for the checks.
struct Sim {
  machine::Machine m;
  rtapp::Config cfg;
  kernel::Kernel k;
  rtapp::Runner run;
  Sim(const std::string& json, machine::Machine mach, Time end = kTimeNever)
      : m(std::move(mach)),
        cfg(rtapp::parse(parse_relaxed_json(json, "t.json"), "t.json", m.nr_cpus())),
        k(m, config()),
        run(cfg, k) {
    const Time stop = end != kTimeNever ? end : run.end_time();
    k.run_until(stop == kTimeNever ? 60 * kNsPerSec : stop);
  }
  static kernel::Config config() {
    kernel::Config c;
    c.profile = kernel::make_profile("v5.4");
    return c;
  }
  // The rows of thread `idx` (threads are numbered across tasks in file order).
  std::vector<rtapp::LogRow> rows(int idx) const {
    for (const auto& t : run.results())
      if (t.idx == idx) return t.rows;
    return {};
  }
  int fork_cpu(int idx) const { return run.results().at(static_cast<std::size_t>(idx)).fork_cpu; }
};

rtapp::LogRow row(int idx, std::uint64_t perf, std::uint64_t run, std::uint64_t period,
                  std::uint64_t start, std::uint64_t end, std::uint64_t rel_st, std::int64_t slack,
                  std::uint64_t c_duration, std::uint64_t c_period, std::uint64_t wu_lat) {
  return {idx, perf, run, period, start, end, rel_st, slack, c_duration, c_period, wu_lat};
}

void expect_row(const rtapp::LogRow& got, const rtapp::LogRow& want, const std::string& what) {
  EXPECT_EQ(rtapp::format_row(got), rtapp::format_row(want)) << what;
}

}  // namespace

TEST(RtAppLog, HeaderAndRowFormatsAreRtAppsPrintf) {
  Sim s(task(R"({"loop": 1, "run": 1})"), testutil::flat_machine(1, 1));
  EXPECT_EQ(s.run.log_header(),
            "#idx     perf      run   period           start             end          rel_st      "
            "slack c_duration   "
            "c_period     wu_lat\n");
  // The tutorial's example row (workloads.md §4.8).
  EXPECT_EQ(rtapp::format_row(row(0, 92164, 19935, 98965, 504549567051, 504549666016, 2443, 78701,
                                  20000, 100000, 266)),
            "   0    92164    19935    98965    504549567051    504549666016            2443      "
            "78701      20000     "
            "100000        266\n");
  EXPECT_EQ(rtapp::format_row(row(12, 0, 0, 0, 0, 0, 0, -1223, 0, 0, 0)),
            "  12        0        0        0               0               0               0      "
            "-1223          0     "
            "     0          0\n");
}

// run 5333 + timer 7777 (the LKML cfs_thread) alone on one CPU for 1 s.
//  iteration 1: runs 0..5333, t_next = 0 + 7777, slack 2444, wakes at 7777 + 50 (slack):
//    wu_lat 50, period 7827;
//  then every 7777 µs: runs 5333 from the wakeup, t_next += 7777, slack 7777 - 5333 - 50.
//  Rows end at 7827 + 7777 k < 1 s: k = 0..127, 128 rows; the 129th iteration is cut.
//  perf = 5333 µs / 100 ns per loop (kSimulatedPLoadNs), as rt-app's loadwait: 53.
TEST(RtAppRun, TimerRowsFollowRtAppsRule) {
  Sim s(R"({"tasks": {"cfs_thread": {"run": 5333, "timer": {"ref": "unique", "period": 7777}}},
            "global": {"duration": 1}})",
        testutil::flat_machine(1, 1));
  const auto rows = s.rows(0);
  ASSERT_EQ(rows.size(), 128u);
  expect_row(rows[0], row(0, 53, 5333, 7827, 0, 7827, 0, 2444, 5333, 7777, 50), "row 0");
  expect_row(rows[1], row(0, 53, 5333, 7777, 7827, 15604, 7827, 2394, 5333, 7777, 50), "row 1");
  expect_row(rows[127], row(0, 53, 5333, 7777, 987729, 995506, 987729, 2394, 5333, 7777, 50),
             "row 127");
  EXPECT_EQ(s.k.now(), kNsPerSec);
}

// run 1000 + sleep 2000: every iteration lasts 1000 + 2000 + 50 (slack) µs; no timer, so
// slack, c_period and wu_lat are 0. 3050 k < 1e6: 327 rows.
TEST(RtAppRun, SleepIsRelativeAndCarriesTheTimerSlack) {
  Sim s(R"({"tasks": {"s": {"run": 1000, "sleep": 2000}}, "global": {"duration": 1}})",
        testutil::flat_machine(1, 1));
  const auto rows = s.rows(0);
  ASSERT_EQ(rows.size(), 327u);
  expect_row(rows[0], row(0, 10, 1000, 3050, 0, 3050, 0, 0, 1000, 0, 0), "row 0");
  expect_row(rows[326], row(0, 10, 1000, 3050, 994300, 997350, 994300, 0, 1000, 0, 0), "last");
}

// run 9000 > period 7777: every timer has expired when reached (no sleep, wu_lat 0).
// Relative mode re-anchors t_next at the late point: slack is 7777 - 9000 every time.
// Absolute mode keeps t_next on the 7777 grid: the slack falls by 1223 µs per row.
TEST(RtAppRun, MissedTimersRelativeAndAbsolute) {
  Sim rel(
      R"({"tasks": {"r": {"run": 9000, "timer": {"ref": "unique", "period": 7777}}}, "global": {"duration": 1}})",
      testutil::flat_machine(1, 1));
  const auto r = rel.rows(0);
  ASSERT_EQ(r.size(), 111u);  // 9000 k < 1e6
  expect_row(r[0], row(0, 90, 9000, 9000, 0, 9000, 0, -1223, 9000, 7777, 0), "rel 0");
  expect_row(r[1], row(0, 90, 9000, 9000, 9000, 18000, 9000, -1223, 9000, 7777, 0), "rel 1");

  Sim abs(
      R"({"tasks": {"a": {"run": 9000, "timer": {"ref": "unique", "period": 7777, "mode": "absolute"}}},
              "global": {"duration": 1}})",
      testutil::flat_machine(1, 1));
  const auto a = abs.rows(0);
  expect_row(a[0], row(0, 90, 9000, 9000, 0, 9000, 0, -1223, 9000, 7777, 0), "abs 0");
  expect_row(a[1], row(0, 90, 9000, 9000, 9000, 18000, 9000, -2446, 9000, 7777, 0), "abs 1");
  expect_row(a[2], row(0, 90, 9000, 9000, 18000, 27000, 18000, -3669, 9000, 7777, 0), "abs 2");
}

// Two timers in one iteration: run 100, timer A (1000: sleeps to 1000, wakes 1050, wu_lat
// 50), run 2000 (to 3050), timer B (1000: t_next = 1000 already passed): the miss resets the
// iteration's wu_lat to 0. slack is B's (1000 - 3050), or A's + B's with cumulative_slack.
TEST(RtAppRun, AMissResetsTheIterationsWakeupLatency) {
  const std::string tasks = R"({"tasks": {"t": {"loop": 1, "run": 100,
      "timer": {"ref": "uniqueA", "period": 1000}, "run2": 2000,
      "timer2": {"ref": "uniqueB", "period": 1000}}}})";
  Sim s(tasks, testutil::flat_machine(1, 1));
  ASSERT_EQ(s.rows(0).size(), 1u);
  expect_row(s.rows(0)[0], row(0, 21, 2100, 3050, 0, 3050, 0, -2050, 2100, 2000, 0), "plain");
  std::string cumulative = tasks;
  cumulative.insert(cumulative.size() - 1, R"(, "global": {"cumulative_slack": true})");
  Sim c(cumulative, testutil::flat_machine(1, 1));
  EXPECT_EQ(c.rows(0).at(0).slack, 900 - 2050);
}

// Two instances on a shared (non-unique) timer of 10000 µs on two CPUs: each use advances the
// shared t_next, so the threads sleep 1 and 2 periods first, then 2 periods each. Here wu_lat
// is measured from the time each thread armed (50 µs); rt-app re-reads the shared t_next
// after waking, which its other user has moved on, and logs -9950 µs wrapped as unsigned.
TEST(RtAppRun, SharedTimerStaggersItsUsers) {
  Sim s(R"({"tasks": {"t": {"instance": 2, "run": 1000, "timer": {"ref": "tick", "period": 10000}}},
            "global": {"duration": 1}})",
        testutil::flat_machine(1, 2));
  const auto a = s.rows(0), b = s.rows(1);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_EQ((std::multiset<std::uint64_t>{a[0].period, b[0].period}),
            (std::multiset<std::uint64_t>{10050, 20050}));
  for (const auto* rows : {&a, &b})
    for (std::size_t i = 0; i < rows->size(); ++i) {
      EXPECT_EQ((*rows)[i].wu_lat, 50u) << i;
      if (i > 0) {
        EXPECT_EQ((*rows)[i].period, 20000u) << i;
      }
    }
}

// tutorial/example7 on two CPUs (runtime = wall time; sleeps wake 50 µs late):
//  task0: runtime 0-1000, sleep to 3050, FIRST (task1 waits there since 2000): releases it;
//         runtime 3050-5050, SECOND (waits); task1 arrives 6100; runtime 6100-7100, sleep to
//         9150, THIRD (task1 waits there since 8100): both go on at 9150.
//  task1: runtime 0-2000, FIRST until 3050, runtime 3050-4050, sleep to 6100, SECOND,
//         runtime 6100-8100, THIRD until 9150.
TEST(RtAppRun, BarriersAsInTutorialExample7) {
  std::ifstream f(kDir + "scheduler-tools_rt-app/tutorial/example7.json");
  std::stringstream ss;
  ss << f.rdbuf();
  Sim s(ss.str(), testutil::flat_machine(1, 2));
  const auto t0 = s.rows(0), t1 = s.rows(1);
  ASSERT_GE(t0.size(), 2u);
  ASSERT_GE(t1.size(), 2u);
  expect_row(t0[0], row(0, 0, 4000, 9150, 0, 9150, 0, 0, 4000, 0, 0), "task0 0");
  expect_row(t1[0], row(1, 0, 5000, 9150, 0, 9150, 0, 0, 5000, 0, 0), "task1 0");
  expect_row(t0[1], row(0, 0, 4000, 9150, 9150, 18300, 9150, 0, 4000, 0, 0), "task0 1");
  // duration 5 s: rows end at 9150 k < 5e6, k = 1..546.
  EXPECT_EQ(t0.size(), 546u);
  EXPECT_EQ(t1.size(), 546u);
}

// rt-app's thread_body: every thread waits at threads_barrier before its first loop, and the
// last to arrive wakes the others. Two threads of one 1 ms run on one CPU with zero costs:
// the first to run blocks at the barrier at 0; the second arrives and wakes it, still at 0.
// Exactly one wakeup, and both loops start at 0 and share the CPU: 2 ms of work in 2 ms.
TEST(RtAppRun, ThreadsWaitForEachOtherBeforeTheirFirstLoop) {
  Sim s(R"({"tasks": {"a": {"loop": 1, "run": 1000}, "b": {"loop": 1, "run": 1000}}})",
        testutil::flat_machine(1, 1));
  EXPECT_EQ(s.run.thread_sched_stats(0).nr_wakeups + s.run.thread_sched_stats(1).nr_wakeups, 1u);
  const auto a = s.rows(0), b = s.rows(1);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].start, 0u);
  EXPECT_EQ(b[0].start, 0u);
  EXPECT_EQ(std::max(a[0].end, b[0].end), 2000u);
}

// lock/wait/unlock against lock/signal/unlock (two CPUs):
//  w: locks m, waits on c (releasing m) at 0;
//  s: delay 500 (wakes 550; its first row starts there, as rt-app sleeps the delay before
//     its loop), runs 1000, locks m, signals c, unlocks at 1550;
//  w: woken at 1550, re-acquires m, unlocks, runs 1000 until 2550.
TEST(RtAppRun, MutexAndConditionWaitSignal) {
  Sim s(R"({"tasks": {
      "w": {"loop": 1, "lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 1000},
      "s": {"loop": 1, "delay": 500, "run": 1000, "lock": "m", "signal": "c", "unlock": "m"}}})",
        testutil::flat_machine(1, 2));
  expect_row(s.rows(0).at(0), row(0, 10, 1000, 2550, 0, 2550, 0, 0, 1000, 0, 0), "w");
  expect_row(s.rows(1).at(0), row(1, 10, 1000, 1000, 550, 1550, 550, 0, 1000, 0, 0), "s");
}

// A bare suspend waits until a resume of the task's name; a resume that comes first is lost,
// and the suspended thread sleeps until the end of the run.
TEST(RtAppRun, SuspendResume) {
  Sim s(
      R"({"tasks": {"a": {"loop": 1, "suspend", "run": 100}, "b": {"loop": 1, "delay": 1000, "resume": "a"}}})",
      testutil::flat_machine(1, 2));
  expect_row(s.rows(0).at(0), row(0, 1, 100, 1150, 0, 1150, 0, 0, 100, 0, 0), "a");

  Sim lost(
      R"({"tasks": {"a": {"loop": 1, "delay": 1000, "suspend", "run": 100}, "b": {"loop": 1, "resume": "a"}}})",
      testutil::flat_machine(1, 2), kNsPerSec);
  EXPECT_TRUE(lost.rows(0).empty());
  EXPECT_EQ(lost.rows(1).size(), 1u);
}

// A named suspend waits on that condition, as in rt-app (video-short's EventThread1/2 suspend
// on "EventThread", which DispSync resumes): one resume wakes both, and a resume of a
// thread's name does not wake a thread suspended on another name.
TEST(RtAppRun, SuspendNamesAConditionAndResumeBroadcasts) {
  Sim s(R"({"tasks": {"e1": {"loop": 1, "suspend": "E", "run": 100},
                      "e2": {"loop": 1, "suspend": "E", "run": 100},
                      "x": {"loop": 1, "suspend": "X", "run": 100},
                      "d": {"loop": 1, "delay": 1000, "resume": "E", "resume1": "x"}}})",
        testutil::flat_machine(1, 4), kNsPerSec);
  ASSERT_EQ(s.rows(0).size(), 1u);
  ASSERT_EQ(s.rows(1).size(), 1u);
  EXPECT_TRUE(s.rows(2).empty());
  // Both woke by the resume at 1000 µs, not before, and ran their 100 µs.
  for (int i : {0, 1}) {
    EXPECT_GE(s.rows(i)[0].end, 1100u) << i;
    EXPECT_EQ(s.rows(i)[0].run, 100u) << i;
  }
  EXPECT_EQ(s.cfg.conds[static_cast<std::size_t>(s.cfg.tasks[0].phases[0].events[0].res)], "E");
}

// The LKML sched-idle experiment without its SCHED_IDLE hogs: eight threads, one per CPU,
// 5 s: 642 rows each, N = 5136 as in the posted summary; here every wakeup costs exactly the
// 50 µs slack.
TEST(RtAppRun, SchedIdleCfsThreadsGiveThePostedRowCount) {
  Sim s(R"({"tasks": {"cfs_thread": {"instance": 8, "run": 5333,
            "timer": {"ref": "unique", "period": 7777}, "policy": "SCHED_OTHER"}},
            "global": {"duration": 5, "calibration": "CPU0", "logsize": 4}})",
        testutil::flat_machine(2, 4));
  std::size_t n = 0;
  std::set<int> cpus;
  for (const auto& t : s.run.results()) {
    n += t.rows.size();
    cpus.insert(t.fork_cpu);
    for (const auto& r : t.rows) ASSERT_EQ(r.wu_lat, 50u);
  }
  EXPECT_EQ(n, 5136u);
  EXPECT_EQ(cpus.size(), 8u);
}

// A phase's cpus apply when it starts; without them the task's cpus apply again.
TEST(RtAppRun, PhaseAffinity) {
  Sim s(R"({"tasks": {"t": {"cpus": [2], "loop": 1, "phases": {
      "p1": {"cpus": [0], "run": 1500}, "p2": {"cpus": [1], "run": 1500}, "p3": {"run": 1500}}}}})",
        testutil::flat_machine(1, 4));
  EXPECT_EQ(s.fork_cpu(0), 2);
  EXPECT_EQ(s.rows(0).size(), 3u);
  const kernel::TaskId id = 0;
  EXPECT_EQ(s.k.task_cpu(id), 2);
  EXPECT_EQ(s.k.task_stats(id).nr_migrations, 3);
}

// A phase's priority is rt-app's setpriority() as the phase starts (set_thread_param), and
// stays for the phases after it: "a" runs 10 ms iterations at nice 0 in p0, then nice 10
// (weight 110) in p1 and again in p2, which names none. Beside a nice-0 hog on one CPU it
// gets half the CPU in p0 and 110 / 1134 in p1 and p2: p0's 50 rows take 1 s, the rest 1 s.
TEST(RtAppRun, APhasesPriorityRenicesTheThreadAndSticks) {
  Sim s(R"({"tasks": {"a": {"loop": 1, "phases": {"p0": {"loop": 50, "run": 10000},
                                                   "p1": {"loop": 5, "run": 10000, "priority": 10},
                                                   "p2": {"loop": 1000, "run": 10000}}},
                       "hog": {"run": 10000}},
            "global": {"duration": 2}})",
        testutil::flat_machine(1, 1));
  EXPECT_EQ(s.k.task_nice(0), 10);
  // In the second second "a" does 1000 ms * 110 / 1134 = 97 ms of work: about 9 rows.
  const double rows = static_cast<double>(s.rows(0).size());
  EXPECT_NEAR(rows, 50 + 9.7, 2);
  EXPECT_GE(rows, 55);  // p1's five rows are done
}

// rt-app sets a nice value for SCHED_OTHER threads only (_set_thread_cfs): a SCHED_IDLE
// task's priority, at task or phase level, changes nothing, and a note says so.
TEST(RtAppParse, APriorityOfASchedIdleTaskIsNoted) {
  rtapp::Config c =
      rtapp::parse(parse_relaxed_json(R"({"tasks": {"i": {"policy": "SCHED_IDLE", "priority": 5,
                                              "phases": {"p": {"run": 1, "priority": 19}}}}})",
                                      "t.json"),
                   "t.json", 1);
  EXPECT_EQ(c.tasks[0].nice, 0);
  EXPECT_FALSE(c.tasks[0].phases[0].nice.has_value());
  ASSERT_EQ(c.ignored.size(), 1u);
  EXPECT_NE(c.ignored[0].find("t.json:1:42: \"priority\" has no effect here: rt-app sets a nice"),
            std::string::npos)
      << c.ignored[0];
}

// run is work at capacity 1024: 1000 µs take 2000 µs on a CPU of half that capacity; runtime
// is wall time whatever the CPU. An integer calibration sets pLoad (the perf column).
TEST(RtAppRun, RunIsWorkRuntimeIsWallTime) {
  machine::Machine m = testutil::flat_machine(1, 2);
  m.cpus[1].capacity = 512;
  Sim s(R"({"tasks": {"r": {"cpus": [1], "loop": 1, "run": 1000, "runtime": 1000}}})", m);
  expect_row(s.rows(0).at(0), row(0, 10, 3000, 3000, 0, 3000, 0, 0, 2000, 0, 0), "r");

  Sim p(R"({"tasks": {"r": {"loop": 1, "run": 5333}}, "global": {"calibration": 50}})",
        testutil::flat_machine(1, 1));
  EXPECT_EQ(p.rows(0).at(0).perf, 106u);  // 5333 / 50
}

// An iteration that neither runs nor blocks costs kEmptyIterationNs (1 µs), so that such a
// thread cannot stop simulated time; run 0 does nothing.
TEST(RtAppRun, AnIterationWithoutWorkCostsOneMicrosecond) {
  Sim s(R"({"tasks": {"t": {"loop": 3, "signal": "c", "run": 0}}})", testutil::flat_machine(1, 1));
  const auto rows = s.rows(0);
  ASSERT_EQ(rows.size(), 3u);
  expect_row(rows[0], row(0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0), "row 0");
  expect_row(rows[2], row(0, 0, 0, 1, 2, 3, 2, 0, 0, 0, 0), "row 2");
  // Forever, for 10 ms: 10 000 rows, and time has moved on.
  Sim forever(R"({"tasks": {"t": {"lock": "m", "unlock": "m"}}})", testutil::flat_machine(1, 1),
              10 * kNsPerMs);
  EXPECT_EQ(forever.rows(0).size(), 9999u);
}

TEST(RtAppRun, WriteLogs) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("schedtwin_rtapp_write_logs_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Sim s(
      R"({"tasks": {"t": {"instance": 2, "loop": 2, "run": 1000}}, "global": {"log_basename": "base"}})",
      testutil::flat_machine(1, 2));
  s.run.write_logs(dir.string());
  std::ifstream f(dir / "base-t-1.log");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(),
            s.run.log_header() +
                rtapp::format_row(row(1, 10, 1000, 1000, 0, 1000, 0, 0, 1000, 0, 0)) +
                rtapp::format_row(row(1, 10, 1000, 1000, 1000, 2000, 1000, 0, 1000, 0, 0)));
  EXPECT_TRUE(fs::exists(dir / "base-t-0.log"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 2);
  try {
    s.run.write_logs((dir / "missing").string());
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "missing").string() + "/base-t-0.log: cannot write log file");
  }
  fs::remove_all(dir);

  Sim off(R"({"tasks": {"t": {"loop": 1, "run": 1000}}, "global": {"log_size": "disable"}})",
          testutil::flat_machine(1, 1));
  EXPECT_FALSE(off.cfg.logs);
  EXPECT_EQ(off.rows(0).size(), 1u);  // still measured for the summary
}

// taskgroup: each path is a task group of cpu.weight 100, so on one CPU the lone task of
// "/b" gets half the CPU and each of the two tasks of "/a" a quarter (in the root group all
// three would get a third). Rows count 10 ms run iterations over 2 s.
TEST(RtAppTaskgroup, TasksShareTheirGroupsWeight) {
  Sim s(R"({"tasks": {"a": {"instance": 2, "run": 10000, "taskgroup": "/a"},
                       "b": {"run": 10000, "taskgroup": "/b"}},
            "global": {"duration": 2}})",
        testutil::flat_machine(1, 1));
  double a0 = static_cast<double>(s.rows(0).size()), a1 = static_cast<double>(s.rows(1).size());
  double b = static_cast<double>(s.rows(2).size());
  EXPECT_NEAR(b, 100, 5);
  EXPECT_NEAR(a0, 50, 5);
  EXPECT_NEAR(a1, 50, 5);
  EXPECT_EQ(s.k.nr_task_groups(), 3);
}

// A phase's taskgroup moves the thread (sched_move_task) and stays for the phases after it:
// "y" joins "/a" in its first phase and shares the group with x1 and x2 (a third each);
// staying in the root it would get half.
TEST(RtAppTaskgroup, APhaseMovesTheThreadAndTheGroupSticks) {
  Sim s(R"({"tasks": {"x": {"instance": 2, "run": 10000, "taskgroup": "/a/sub"},
                       "y": {"phases": {"p0": {"run": 10000, "taskgroup": "/a/sub"},
                                        "p1": {"run": 10000}}}},
            "global": {"duration": 3}})",
        testutil::flat_machine(1, 1));
  EXPECT_NEAR(static_cast<double>(s.rows(2).size()), 100, 6);
  EXPECT_NEAR(static_cast<double>(s.rows(0).size()), 100, 6);
  EXPECT_EQ(s.k.nr_task_groups(), 3);  // root, /a, /a/sub
}

TEST(RtAppTaskgroup, APathMustBeginWithASlash) {
  EXPECT_THROW(rtapp::parse(parse_relaxed_json(
                                R"({"tasks": {"a": {"run": 1, "taskgroup": "tg1"}}})", "t.json"),
                            "t.json", 1),
               InputError);
  EXPECT_THROW(rtapp::parse(parse_relaxed_json(
                                R"({"tasks": {"a": {"run": 1, "taskgroup": "/a//b"}}})", "t.json"),
                            "t.json", 1),
               InputError);
}
