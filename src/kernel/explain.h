// The decision log behind --explain: for each wakeup placement and each load-balance
// attempt, why it came out as it did, in the kernel's decision order. The kernel model
// fills records only while an Explain is installed (Kernel::set_explain), so a run
// without --explain pays one pointer test per decision.
//
// Text: one line per record,
//   [   0.104003] cpu2 wakeup cfs_thread-3: prev=5 waker=irq wake_wide=no ... | ... | -> cpu5
// JSON lines: {"t_ns":104003000,"cpu":2,"kind":"wakeup","task":"cfs_thread-3",
//              "fields":{...},"steps":["...", ...],"result":"cpu5"}
// where "fields" holds the text line's fields (numbers as JSON numbers, yes/no as true/false)
// and, for jq and
// scripts, the decision's figures that the text gives only inside its steps and result
// (data(): e.g. a wakeup's chosen "cpu", a balance's group statistics and "moved").
// At most `limit` records are written; the rest are counted (dropped()). set_filter keeps
// only records at a simulated time in [from, to) and, with comms given, wakeup and fork
// records of tasks with one of those comms (balance records name no task: they are left
// out then); records filtered out are not counted.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/time.h"

namespace schedtwin::kernel {

class Explain {
 public:
  enum class Format { Text, Jsonl };
  Explain(std::ostream& out, Format format, std::uint64_t limit)
      : out_(out), format_(format), limit_(limit) {}

  // Starts a record; returns false (and records nothing until the next begin) when the
  // limit has been reached.
  bool begin(std::string_view kind, Time t, int cpu, std::string_view task);
  void set_filter(Time from, Time to, std::vector<std::string> comms);
  bool active() const { return active_; }
  void field(std::string_view key, std::string_view value) { add(key, value, false, true); }
  void field(std::string_view key, long long value) { add(key, std::to_string(value), true, true); }
  // A yes/no field: "key=yes" in the text line (shown only when `shown`), true/false in JSON.
  void flag(std::string_view key, bool value, bool shown = true) {
    add(key, value ? "yes" : "no", false, shown, true);
  }
  // JSON lines only; a key given twice keeps its last value.
  void data(std::string_view key, std::string_view value) { add(key, value, false, false); }
  void data(std::string_view key, long long value) { add(key, std::to_string(value), true, false); }
  // Forgets the data() given so far: a balance that redoes (all pinned) describes its last
  // pass only, not a mix of passes. Text fields and steps stay.
  void clear_data();
  void step(std::string value);
  void end(std::string_view result);

  std::uint64_t written() const { return written_; }
  std::uint64_t dropped() const { return dropped_; }

 private:
  std::ostream& out_;
  Format format_;
  std::uint64_t limit_;
  std::uint64_t written_ = 0, dropped_ = 0;
  Time from_ = 0, to_ = kTimeNever;
  std::vector<std::string> comms_;
  bool active_ = false;
  std::string kind_, task_;
  Time t_ = 0;
  int cpu_ = 0;
  struct Field {
    std::string key, value;
    bool number = false;  // written unquoted in JSON
    bool text = true;     // shown in the text line
    bool boolean = false;  // value is "yes" or "no": JSON true / false
  };
  void add(std::string_view key, std::string_view value, bool number, bool text,
           bool boolean = false);
  std::vector<Field> fields_;
  std::vector<std::string> steps_;
};

}  // namespace schedtwin::kernel
