#include "kernel/explain.h"

#include <fmt/core.h>

#include <algorithm>

namespace schedtwin::kernel {

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

void Explain::set_filter(Time from, Time to, std::vector<std::string> comms) {
  from_ = from;
  to_ = to;
  comms_ = std::move(comms);
}

bool Explain::begin(std::string_view kind, Time t, int cpu, std::string_view task) {
  if (active_) end("(interrupted)");
  // A task is labelled "comm[pid]" (KernelImpl::task_label).
  const std::string_view comm = task.substr(0, task.rfind('['));
  if (t < from_ || t >= to_ ||
      (!comms_.empty() &&
       (task.empty() || std::find(comms_.begin(), comms_.end(), comm) == comms_.end()))) {
    active_ = false;
    return false;
  }
  if (written_ >= limit_) {
    ++dropped_;
    active_ = false;
    return false;
  }
  active_ = true;
  kind_ = kind;
  task_ = task;
  t_ = t;
  cpu_ = cpu;
  fields_.clear();
  steps_.clear();
  return true;
}

void Explain::add(std::string_view key, std::string_view value, bool number, bool text,
                  bool boolean) {
  if (!active_) return;
  for (Field& f : fields_)
    if (f.key == key) {
      f = {std::string(key), std::string(value), number, text, boolean};
      return;
    }
  fields_.push_back({std::string(key), std::string(value), number, text, boolean});
}

void Explain::clear_data() {
  std::erase_if(fields_, [](const Field& f) { return !f.text; });
}

void Explain::step(std::string value) {
  if (active_) steps_.push_back(std::move(value));
}

void Explain::end(std::string_view result) {
  if (!active_) return;
  active_ = false;
  ++written_;
  if (format_ == Format::Text) {
    const Time usecs = (t_ + 500) / 1000;  // rounded as ftrace's timestamps are (ns2usecs)
    std::string line =
        fmt::format("[{:5}.{:06}] cpu{} {}", usecs / 1000000, usecs % 1000000, cpu_, kind_);
    if (!task_.empty()) line += " " + task_;
    line += ":";
    for (const Field& f : fields_)
      if (f.text) line += " " + f.key + "=" + f.value;
    for (const auto& s : steps_) line += " | " + s;
    line += " -> ";
    line += result;
    out_ << line << '\n';
    return;
  }
  std::string j = fmt::format("{{\"t_ns\":{},\"cpu\":{},\"kind\":{},\"task\":{},\"fields\":{{", t_,
                              cpu_, json_string(kind_), json_string(task_));
  for (size_t i = 0; i < fields_.size(); ++i)
    j += (i ? "," : "") + json_string(fields_[i].key) + ":" +
         (fields_[i].boolean  ? std::string(fields_[i].value == "yes" ? "true" : "false")
          : fields_[i].number ? fields_[i].value
                              : json_string(fields_[i].value));
  j += "},\"steps\":[";
  for (size_t i = 0; i < steps_.size(); ++i) j += (i ? "," : "") + json_string(steps_[i]);
  j += "],\"result\":" + json_string(result) + "}";
  out_ << j << '\n';
}

}  // namespace schedtwin::kernel
