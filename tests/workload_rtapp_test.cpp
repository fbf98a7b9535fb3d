// The rt-app front end: every example file's expected outcome, the relaxed JSON rules,
// and bad inputs with their one-line errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/error.h"
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
      {"ARM-software_workload-automation/taskset.json", "taskset.json:4:14: task \"ThreadA\": \"exec\" belongs to the legacy"},
      {"scheduler-tools_rt-app/cpufreq_governor_efficiency/calibration.json", "SCHED_FIFO is not modelled yet"},
      {"scheduler-tools_rt-app/cpufreq_governor_efficiency/dvfs.json", "SCHED_FIFO is not modelled yet"},
      {"scheduler-tools_rt-app/custom-slice.json", "\"dl-runtime\": SCHED_DEADLINE parameters"},
      {"scheduler-tools_rt-app/merge/global.json", "missing \"tasks\""},
      {"scheduler-tools_rt-app/merge/thread0.json", "legacy pre-2014"},
      {"scheduler-tools_rt-app/tutorial/example6.json", "event \"mem\" is not modelled yet"},
      {"scheduler-tools_rt-app/tutorial/example9.json", "example9.json:32:7: event \"fork\" is not modelled yet"},
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
  rtapp::Config c = parse_text(R"({"tasks": {"t": {"loop": 1, "run": 10, "sleep": 20, "run": 30}}})");
  const auto& ev = c.tasks[0].phases[0].events;
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].type, rtapp::EventType::Run);
  EXPECT_EQ(ev[0].us, 10);
  EXPECT_EQ(ev[1].type, rtapp::EventType::Sleep);
  EXPECT_EQ(ev[2].us, 30);
}

TEST(RtAppParse, CommentsTrailingCommasAndBareKeys) {
  rtapp::Config c = parse_text(
      "{ /* c */ \"tasks\": { // line\n \"t\": { \"suspend\", \"run\": 5, }, \"u\": {\"resume\": \"t\", "
      "\"run\": 1,},},}");
  ASSERT_EQ(c.tasks.size(), 2u);
  EXPECT_EQ(c.tasks[0].phases[0].events[0].type, rtapp::EventType::Suspend);
  EXPECT_EQ(c.tasks[1].phases[0].events[0].type, rtapp::EventType::Resume);
  EXPECT_EQ(c.tasks[0].phases[0].events[0].res, c.tasks[1].phases[0].events[0].res);
}

TEST(RtAppParse, EventsMatchByPrefixRuntimeBeforeRun) {
  rtapp::Config c = parse_text(R"({"tasks": {"t": {"runtime1": 5, "run_x": 6, "timer2": {"ref": "unique", "period": 9}}}})");
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
      {"{\"tasks\": {\"t\": {\"run\": 5}}", "t.json:1:28: syntax error while parsing object - unexpected end of input"},
      {"{\"tasks\": {\"t\": {\"rum\": 5}}}", "t.json:1:19: unknown key \"rum\""},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"timer\": {\"ref\": \"a\", \"period\": 0}}}}", "timer period must be positive"},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"timer\": {\"ref\": \"a\", \"period\": -5}}}}", "timer period must be positive"},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"policy\": \"SCHED_FOO\"}}}", "unknown policy \"SCHED_FOO\""},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"priority\": 25}}}", "\"priority\": 25 is out of range [-20, 19]"},
      {"{\"tasks\": {\"t\": {\"run\": 5, \"instance\": 5000000}}}", "t.json:1:29: \"instance\": 5000000 is out of range [0, 100000]"},
      {"{\"tasks\": {\"t\": {\"run\": 5}}, \"global\": {\"duration\": 0}}", "\"duration\": must be positive"},
      {"{\"tasks\": {\"t\": {\"run\": 5}}, \"global\": {\"duration\": 99999999}}", "\"duration\": 99999999 is out of range [-1, 3600]"},
      {"{\"tasks\": {\"t\": {\"run\": \"x\"}}}", "\"run\": expected a number, found a string"},
      {"{\"tasks\": {\"t\": {\"cpus\": [9], \"run\": 1}}}", "\"cpus\": 9 is out of range [0, 7]"},
      {"[1, 2]", "expected an object"},
  };
  for (const auto& [text, want] : cases) {
    std::string got = error_text(text);
    EXPECT_NE(got.find(want), std::string::npos) << text << " -> " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}
