#include "workload/pingpong.h"

#include <fmt/core.h>

#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/error.h"

namespace schedtwin::workload {

using kernel::Step;
using kernel::TaskId;

namespace {

// One strand: two flowops in a loop, each a blocking read or write of one message on one of
// its connection's streams (uperf flowop_execute -> protocol read/write, for count=1).
class StrandBody final : public kernel::TaskBody {
 public:
  StrandBody(Pingpong::State* s, int conn, bool master) : s_(s), conn_(conn), master_(master) {}
  Step next(TaskId self, Time now) override;
  TaskId id = kernel::kNoTask;

 private:
  enum class Phase : std::uint8_t { Call, Commit };
  Pingpong::State* s_;
  int conn_;
  bool master_;
  int flowop_ = 0;  // 0 or 1: index in the transaction's flowop list
  bool after_sleep_ = false;
  Phase phase_ = Phase::Call;
};

}  // namespace

struct Pingpong::State {
  kernel::Kernel& k;
  KernelWaker waker;
  PingpongParams p;
  Time write_cost = 0, read_cost = 0;
  std::vector<Channel> to_slave, to_master;  // per connection
  std::vector<StrandBody> slaves, masters;   // never move once created (reserved)
  std::uint64_t ops = 0, slave_ops = 0, round_trips = 0;
  bool started = false;
  Time start = 0;

  State(kernel::Kernel& kk, const PingpongParams& pp) : k(kk), waker(kk), p(pp) {}
};

namespace {

// The master's transaction is {read, write}; the slave's is the opposite, {write, read}.
Step StrandBody::next(TaskId self, Time) {
  Pingpong::State& s = *s_;
  const std::size_t c = static_cast<std::size_t>(conn_);
  for (;;) {
    const bool reading = (flowop_ == 0) == master_;
    switch (phase_) {
      case Phase::Call:
        phase_ = Phase::Commit;
        return Step::run(reading ? s.read_cost : s.write_cost);
      case Phase::Commit: {
        Channel& ch = master_ == reading ? s.to_master[c] : s.to_slave[c];
        if (reading) {
          if (!ch.read(s.waker, self)) return Step::block();
        } else {
          if (!ch.write(s.waker, self, after_sleep_)) {
            after_sleep_ = true;
            return Step::block();
          }
          after_sleep_ = false;
        }
        // FLOWOP_END: one op of msg_bytes for the side that ran it.
        if (master_) {
          ++s.ops;
          if (reading) ++s.round_trips;
        } else {
          ++s.slave_ops;
        }
        flowop_ ^= 1;
        phase_ = Phase::Call;
        break;
      }
    }
  }
}

ChannelConfig stream_config(const PingpongParams& p) {
  ChannelConfig c;
  c.transport = Transport::UnixStream;  // blocking read, WF_SYNC data-ready wakeup
  c.msg_bytes = static_cast<int>(p.msg_bytes);
  // Lock step keeps at most one message per direction in flight, so the send budget never
  // binds (a TCP send waits only when sk_wmem_queued exceeds sk_sndbuf, >= 16 KiB).
  c.skb_truesize = p.msg_bytes;
  c.sndbuf = std::numeric_limits<std::int64_t>::max() / 4;
  return c;
}

}  // namespace

void validate(const PingpongParams& p) {
  auto bad = [](const std::string& what) { throw InputError("pingpong: " + what); };
  if (p.connections < 1 || p.connections > kPingpongMaxConnections)
    bad(fmt::format("connections must be in 1..{}", kPingpongMaxConnections));
  if (p.msg_bytes < 1 || p.msg_bytes > kPingpongMaxBytes)
    bad(fmt::format("message size must be in 1..{} bytes", kPingpongMaxBytes));
  if (p.duration < 1 || p.duration > kPingpongMaxDuration)
    bad(fmt::format("duration must be in 1..{} ns", kPingpongMaxDuration));
}

double PingpongResult::throughput_bps() const {
  return elapsed > 0 ? static_cast<double>(bytes) * 8.0 / (static_cast<double>(elapsed) / 1e9)
                     : 0.0;
}

double PingpongResult::ops_per_s() const {
  return elapsed > 0 ? static_cast<double>(ops) / (static_cast<double>(elapsed) / 1e9) : 0.0;
}

Pingpong::Pingpong(kernel::Kernel& k, const PingpongParams& p) {
  validate(p);
  s_ = std::make_unique<State>(k, p);
  const machine::CostModel& c = k.machine().costs;
  s_->write_cost = c.socket_write.ns;
  s_->read_cost = c.socket_read.ns;
  const std::size_t n = static_cast<std::size_t>(p.connections);
  const ChannelConfig cfg = stream_config(p);
  s_->to_slave.assign(n, Channel(cfg));
  s_->to_master.assign(n, Channel(cfg));
  s_->slaves.reserve(n);
  s_->masters.reserve(n);
  for (int i = 0; i < p.connections; ++i) {
    s_->slaves.emplace_back(s_.get(), i, false);
    s_->masters.emplace_back(s_.get(), i, true);
  }
}

Pingpong::~Pingpong() = default;

void Pingpong::start() {
  if (s_->started) throw std::logic_error("Pingpong::start called twice");
  s_->started = true;
  s_->start = s_->k.now();
  kernel::TaskAttr attr;
  attr.name = s_->p.comm;
  // uperf's strands are threads of one process; its main thread is not simulated, so the
  // first strand stands for the process.
  for (auto* side : {&s_->slaves, &s_->masters})
    for (StrandBody& b : *side) {
      b.id = s_->k.create_task(attr, &b, 0);
      if (attr.thread_group == kernel::kNoTask) attr.thread_group = b.id;
    }
}

PingpongResult Pingpong::result() const {
  PingpongResult r;
  const State& s = *s_;
  r.start = s.start;
  r.elapsed = s.started ? s.k.now() - s.start : 0;
  r.ops = s.ops;
  r.bytes = s.ops * static_cast<std::uint64_t>(s.p.msg_bytes);
  r.round_trips = s.round_trips;
  r.slave_ops = s.slave_ops;
  r.slave_bytes = s.slave_ops * static_cast<std::uint64_t>(s.p.msg_bytes);
  r.threads = s.p.connections;
  r.tasks = 2 * s.p.connections;
  for (const Channel& c : s.to_slave) r.to_slave += c.stats();
  for (const Channel& c : s.to_master) r.to_master += c.stats();
  return r;
}

TaskId Pingpong::master_task(int conn) const {
  return s_->masters.at(static_cast<std::size_t>(conn)).id;
}
TaskId Pingpong::slave_task(int conn) const {
  return s_->slaves.at(static_cast<std::size_t>(conn)).id;
}
const Channel& Pingpong::to_slave(int conn) const {
  return s_->to_slave.at(static_cast<std::size_t>(conn));
}
const Channel& Pingpong::to_master(int conn) const {
  return s_->to_master.at(static_cast<std::size_t>(conn));
}

PingpongResult run_pingpong(kernel::Kernel& k, const PingpongParams& p) {
  Pingpong pp(k, p);
  pp.start();
  k.run_until(k.now() + p.duration);
  return pp.result();
}

}  // namespace schedtwin::workload
