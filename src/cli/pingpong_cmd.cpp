// `schedtwin pingpong [--threads N] [--size 8k] [-r SECONDS] [common]`
#include "cli/pingpong_cmd.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/run_common.h"
#include "engine/error.h"
#include "kernel/kernel.h"

namespace schedtwin::cli {

namespace {

// The profile's name as uperf prints it: the Sun/Oracle profile is "TCP PingPong" and uperf
// lower-cases profile names ("tcp-stream-16384B-2i" prints as "tcp-stream-16384b-2i").
constexpr const char* kProfileName = "tcp pingpong";
constexpr double kMaxRuntimeS = static_cast<double>(workload::kPingpongMaxDuration) / 1e9;

nlohmann::json stats_json(const workload::ChannelStats& s) {
  return {{"writes", s.writes},
          {"reads", s.reads},
          {"reader_blocks", s.reader_blocks},
          {"reader_wakeups", s.reader_wakeups}};
}

void emit(const CommonOptions& common, const PingpongOutcome& out) {
  emit_report(out.text, out.json, common.json_out);
}

}  // namespace

std::int64_t parse_uperf_size(std::string_view text) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return -1;
  std::int64_t v = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    v = v * 10 + (text[i] - '0');
    if (v > (std::int64_t{1} << 62)) return -1;
  }
  if (i == text.size()) return v;
  if (i + 1 != text.size()) return -1;
  int shift;
  switch (text[i]) {
    case 'b':
    case 'B':
      shift = 0;
      break;
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    default:
      return -1;
  }
  if (v > ((std::int64_t{1} << 62) >> shift)) return -1;
  return v << shift;
}

std::string uperf_decimal(double value, int width, bool bits) {
  std::string s;
  if (value == 0) {
    s = "0";
  } else {
    // snprintf, not fmt: the figures must round exactly as uperf's printf does.
    static constexpr char kSuffix[] = " KMGTPEZ";
    const double div = bits ? 1000.0 : 1024.0;
    int pos = 0;
    while (value > div && pos < 7) {  // uperf stops at sizeof(suffix); "Z" suffices here
      value /= div;
      ++pos;
    }
    char buf[64];
    if (pos == 0)
      std::snprintf(buf, sizeof buf, bits ? "%.2fb/s" : "%.2fB", value);
    else
      std::snprintf(buf, sizeof buf, bits ? "%.2f%cb/s" : "%.2f%cB", value, kSuffix[pos]);
    s = buf;
    // decimal_to_string gets the field width as its buffer size: at most width - 1 characters.
    if (width >= 1 && s.size() > static_cast<std::size_t>(width - 1))
      s.resize(static_cast<std::size_t>(width - 1));
  }
  return fmt::format("{:>{}} ", s, width);
}

std::string uperf_summary_line(std::string_view name, double bytes, double ops, Time elapsed) {
  if (elapsed <= 0) return "";
  const double secs = static_cast<double>(elapsed) / 1e9;
  char time_buf[64], ops_buf[64];
  std::snprintf(time_buf, sizeof time_buf, "/%7.2f(s) = ", secs);
  std::snprintf(ops_buf, sizeof ops_buf, " %10.0fop/s ", ops / secs);
  return fmt::format("{:<8.8} ", name) + uperf_decimal(bytes, 8, false) + time_buf +
         uperf_decimal(bytes * 8.0 / secs, 12, true) + ops_buf + "\n";
}

std::string pingpong_text(const workload::PingpongParams& p, const workload::PingpongResult& r) {
  const double bytes = static_cast<double>(r.bytes);
  const double ops = static_cast<double>(r.ops);
  // master(): "Starting %d threads running profile:%s ... " then " %5.2f seconds\n" (the time
  // pthread_create took; not modelled). master_poll(): the transaction's progress line, "\n"
  // and uperf_line(); then print_summary of the aggregate ("Total").
  return fmt::format("Starting {} threads running profile:{} ...   0.00 seconds\n", p.connections,
                     kProfileName) +
         uperf_summary_line("Txn2", bytes, ops, r.elapsed) + std::string(79, '-') + "\n" +
         uperf_summary_line("Total", bytes, ops, r.elapsed);
}

PingpongOutcome run_pingpong_command(const CommonOptions& o, const workload::PingpongParams& p) {
  workload::validate(p);
  Scenario s = make_scenario(o);
  kernel::Kernel k(s.machine, s.config);
  TraceOutputs traces = open_traces(o, k);
  const auto t0 = std::chrono::steady_clock::now();
  PingpongOutcome out;
  out.result = workload::run_pingpong(k, p);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  traces.finish();
  const workload::PingpongResult& r = out.result;
  out.text = pingpong_text(p, r);
  nlohmann::json& j = out.json;
  j = common_json("pingpong", s, k, wall);
  j["throughput_gbps"] = r.throughput_bps() / 1e9;
  j["ops_per_s"] = r.ops_per_s();
  j["threads"] = p.connections;
  j["size_bytes"] = p.msg_bytes;
  j["duration_s"] = static_cast<double>(p.duration) / 1e9;
  j["profile"] = kProfileName;
  j["ops"] = r.ops;
  j["bytes"] = r.bytes;
  j["round_trips"] = r.round_trips;
  j["slave_ops"] = r.slave_ops;
  j["slave_bytes"] = r.slave_bytes;
  j["tasks"] = r.tasks;
  j["streams"] = {{"to_slave", stats_json(r.to_slave)}, {"to_master", stats_json(r.to_master)}};
  add_kernel_reports(o, k, out.text, j);
  return out;
}

void add_pingpong_options(CLI::App& sub, PingpongArgs& a) {
  sub.add_option("--threads", a.threads,
                 "Connections (uperf's nthreads, $t): each is a master and a slave thread in "
                 "lock step (the latency-nice series ran 8 to 128)")
      ->capture_default_str()
      ->check(range(1, workload::kPingpongMaxConnections));
  sub.add_option("--size", a.size,
                 "Bytes per read and write, uperf syntax: digits then optionally b, k, m or g "
                 "(k = 1024), e.g. 64, 8k, 1m; 1 to 1g")
      ->capture_default_str();
  sub.add_option("-r,--runtime", a.runtime_s,
                 "Seconds of the timed transaction, as a number or in uperf's duration syntax "
                 "(the profile's duration=\"30s\"): 30, 30s, 500ms; fractions allowed, up to "
                 "86400 s")
      ->capture_default_str()
      ->transform(CLI::Validator(
          [](std::string& in) -> std::string {
            // uperf's "30s" / "500ms": the number in seconds, which the option then reads.
            auto ends = [&](std::string_view suffix) {
              return in.size() > suffix.size() &&
                     in.compare(in.size() - suffix.size(), suffix.size(), suffix) == 0;
            };
            if (ends("ms")) {
              const std::string num = in.substr(0, in.size() - 2);
              double v = 0;
              if (!CLI::detail::lexical_cast(num, v))
                return "expected seconds, e.g. 30, 30s, 500ms";
              in = fmt::format("{}", v / 1000);
            } else if (ends("s")) {
              in.pop_back();
            }
            double v = 0;
            if (!CLI::detail::lexical_cast(in, v)) return "expected seconds, e.g. 30, 30s, 500ms";
            return "";
          },
          "SECONDS"));
  add_common_options(sub, a.common);
}

workload::PingpongParams pingpong_params(const PingpongArgs& a) {
  workload::PingpongParams p;
  p.connections = a.threads;
  p.msg_bytes = parse_uperf_size(a.size);
  if (p.msg_bytes < 1 || p.msg_bytes > workload::kPingpongMaxBytes)
    throw UsageError(fmt::format(
        "--size {}: expected 1 to 1g bytes as digits with an optional b, k, m or g suffix "
        "(e.g. 64, 8k, 1m)",
        a.size));
  // !(x >= lo) also rejects NaN.
  if (!(a.runtime_s >= 1e-6 && a.runtime_s <= kMaxRuntimeS))
    throw UsageError(
        fmt::format("-r {}: expected seconds from 0.000001 to {}", a.runtime_s, kMaxRuntimeS));
  p.duration = static_cast<Time>(std::llround(a.runtime_s * 1e9));
  return p;
}

void register_pingpong_command(CLI::App& app) {
  auto o = std::make_shared<PingpongArgs>();
  CLI::App* sub = app.add_subcommand(
      "pingpong",
      "uperf's TCP ping-pong profile: --threads connections over loopback, each a master thread\n"
      "looping {read; write} and a slave thread {write; read} of --size bytes, for -r seconds.\n"
      "Per-message costs are the machine's socket_write / socket_read; every write wakes the\n"
      "sleeping reader with a sync wakeup. Prints uperf's lines, ending with the Total line\n"
      "(bytes of the master threads' reads and writes, Gb/s with decimal prefixes, op/s).");
  add_pingpong_options(*sub, *o);
  sub->callback([o] { emit(o->common, run_pingpong_command(o->common, pingpong_params(*o))); });
}

}  // namespace schedtwin::cli
