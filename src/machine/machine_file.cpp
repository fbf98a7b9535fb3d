#include "machine/machine_file.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "engine/counting_iter.h"
#include "engine/error.h"
#include "engine/spelling.h"
#include "machine/capture.h"

namespace schedtwin::machine {

namespace {

using nlohmann::json;

// Line and column (1-based, columns in characters) of every value of a machine file, by the
// JSON path the errors use ("", "topology", "topology.cpus[3].core"): a value in an object is
// placed at its key.
using Positions = std::map<std::string, std::pair<int, int>>;

using engine::CountingIter;

class PositionIndex : public nlohmann::json_sax<json> {
 public:
  PositionIndex(std::string_view text, const std::size_t* pos) : text_(text), pos_(pos) {}
  Positions positions;

  bool null() override { return value(Token::Literal); }
  bool boolean(bool) override { return value(Token::Literal); }
  bool number_integer(number_integer_t) override { return value(Token::Number); }
  bool number_unsigned(number_unsigned_t) override { return value(Token::Number); }
  bool number_float(number_float_t, const string_t&) override { return value(Token::Number); }
  bool string(string_t&) override { return value(Token::String); }
  bool binary(binary_t&) override { return value(Token::Literal); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    f.key_path = f.path.empty() ? k : f.path + "." + k;
    const auto [it, fresh] = positions.emplace(f.key_path, where(Token::String));
    if (!fresh && duplicate.empty()) {
      duplicate = f.key_path;
      duplicate_at = where(Token::String);
    }
    return true;
  }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t byte, const std::string&,
                   const nlohmann::detail::exception&) override {
    error_byte = byte;  // parse_machine reports syntax errors itself
    return false;
  }
  std::size_t error_byte = 0;  // where parsing stopped, as json::parse_error::byte
  // The first key given twice in one object (nlohmann keeps the last value without a word),
  // and where its second occurrence is; positions holds the first.
  std::string duplicate;
  std::pair<int, int> duplicate_at;

 private:
  enum class Token { String, Number, Literal, Bracket };
  struct Frame {
    bool array;
    std::string path, key_path;
    std::size_t next = 0;  // index of the next array item
  };

  // The path of the value now starting; records it unless its key already placed it.
  std::string path_of_new_value(Token t) {
    if (stack_.empty()) {
      positions[""] = where(t);
      return "";
    }
    Frame& f = stack_.back();
    if (!f.array) return f.key_path;
    std::string p = f.path + "[" + std::to_string(f.next++) + "]";
    positions[p] = where(t);
    return p;
  }
  bool value(Token t) {
    path_of_new_value(t);
    return true;
  }
  bool open(bool array) {
    std::string p = path_of_new_value(Token::Bracket);
    stack_.push_back({array, std::move(p), {}, 0});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  // Start of the token just read: a string ends at its closing quote, a literal at its last
  // letter, a bracket is the last character read, a number is followed by one character of
  // look-ahead (none at the end of the text).
  std::pair<int, int> where(Token t) const {
    const std::size_t end = std::min(*pos_, text_.size());
    std::size_t p = end == 0 ? 0 : end - 1;
    auto is_num = [](char ch) {
      return (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+' || ch == 'e' ||
             ch == 'E';
    };
    switch (t) {
      case Token::Bracket:
        break;
      case Token::String:
        while (p > 0) {
          --p;
          std::size_t backslashes = 0;
          while (backslashes < p && text_[p - 1 - backslashes] == '\\') ++backslashes;
          if (text_[p] == '"' && backslashes % 2 == 0) break;
        }
        break;
      case Token::Number:
        p = end;
        if (p > 0 && !is_num(text_[p - 1])) --p;
        while (p > 0 && is_num(text_[p - 1])) --p;
        break;
      case Token::Literal:
        p = end;
        while (p > 0 && std::isalpha(static_cast<unsigned char>(text_[p - 1]))) --p;
        break;
    }
    // Line and column of p; the scan from the last position keeps this linear over the file.
    if (p < scanned_) {
      scanned_ = 0;
      line_ = col_ = 1;
    }
    for (; scanned_ < p; ++scanned_) {
      if (text_[scanned_] == '\n') {
        ++line_;
        col_ = 1;
      } else if ((static_cast<unsigned char>(text_[scanned_]) & 0xC0) != 0x80) {
        ++col_;
      }
    }
    return {line_, col_};
  }

  std::string_view text_;
  const std::size_t* pos_;
  std::vector<Frame> stack_;
  mutable std::size_t scanned_ = 0;
  mutable int line_ = 1, col_ = 1;
};

// Reads one machine file, keeping the origin for error messages. Every accessor takes the JSON
// path of the value so that errors say exactly where the problem is; with the positions of the
// file's text they also give its line and column.
class Reader {
 public:
  explicit Reader(std::string_view origin, const Positions* positions = nullptr)
      : origin_(origin), positions_(positions) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    if (positions_) {
      // The value itself, else the nearest enclosing one that the file has (a missing key is
      // reported at its object, a generated CPU at "topology").
      for (std::string p = path;;) {
        auto it = positions_->find(p == "(top level)" ? "" : p);
        if (it != positions_->end())
          throw InputError(fmt::format("{}:{}:{}: {}: {}", origin_, it->second.first,
                                       it->second.second, path, what));
        if (p.empty() || p == "(top level)") break;
        const std::size_t cut = p.find_last_of(".[");
        p = cut == std::string::npos ? std::string() : p.substr(0, cut);
      }
    }
    throw InputError(fmt::format("{}: {}: {}", origin_, path, what));
  }

  static std::string child(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  static std::string index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  void expect_object(const json& j, const std::string& path) const {
    if (!j.is_object()) fail(path.empty() ? "(top level)" : path, "expected an object");
  }

  // Rejects keys outside `allowed`; requires every key of `required`.
  void check_keys(const json& obj, const std::string& path, const std::set<std::string>& allowed,
                  const std::vector<std::string>& required) const {
    expect_object(obj, path);
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (!allowed.count(it.key()))
        fail(child(path, it.key()),
             fmt::format("unknown key ({}expected one of: {})",
                         engine::did_you_mean(it.key(), {allowed.begin(), allowed.end()}, '"'),
                         fmt::join(allowed, ", ")));
    for (const std::string& k : required)
      if (!obj.contains(k)) fail(child(path, k), "missing");
  }

  std::int64_t integer(const json& v, const std::string& path, std::int64_t lo,
                       std::int64_t hi) const {
    std::int64_t x = 0;
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        fail(path, fmt::format("{} is too large", v.dump()));
      x = static_cast<std::int64_t>(v.get<std::uint64_t>());
    } else if (v.is_number_integer()) {
      x = v.get<std::int64_t>();
    } else {
      fail(path, fmt::format("expected an integer, got {}", v.dump()));
    }
    if (x < lo || x > hi) fail(path, fmt::format("{} is out of range [{}, {}]", x, lo, hi));
    return x;
  }

  Time ns(const json& v, const std::string& path) const {
    if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0)
      fail(path, fmt::format("negative time {} ns (expected a non-negative integer)", v.dump()));
    return integer(v, path, 0, INT64_MAX);
  }

  int small(const json& v, const std::string& path, int lo, int hi) const {
    return static_cast<int>(integer(v, path, lo, hi));
  }

  std::string string(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, fmt::format("expected a string, got {}", v.dump()));
    return v.get<std::string>();
  }

  bool boolean(const json& v, const std::string& path) const {
    if (!v.is_boolean()) fail(path, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>();
  }

  double number(const json& v, const std::string& path) const {
    if (!v.is_number()) fail(path, fmt::format("expected a number, got {}", v.dump()));
    return v.get<double>();
  }

  std::string optional_source(const json& obj, const std::string& path) const {
    return obj.contains("source") ? string(obj["source"], child(path, "source")) : std::string();
  }

 private:
  std::string origin_;
  const Positions* positions_;
};

constexpr int kMaxId = 1 << 20;
// MAX_NUMNODES with the largest CONFIG_NODES_SHIFT (10) the kernel allows.
constexpr int kMaxNodes = 1024;
constexpr const char* kSingleNodeSource = "single node (no numa_distance given)";
// A 4096-CPU machine in the explicit form is about 400 KB.
constexpr std::size_t kMaxMachineFileBytes = 16u << 20;

// Expands the compact topology description (see machine_file.h).
std::vector<Cpu> expand_generator(const Reader& r, const json& t) {
  const std::string p = "topology";
  const int packages = r.small(t["packages"], p + ".packages", 1, Machine::kMaxCpus);
  const int cores = r.small(t["cores_per_package"], p + ".cores_per_package", 1, Machine::kMaxCpus);
  const int threads = r.small(t["threads_per_core"], p + ".threads_per_core", 1, Machine::kMaxCpus);
  const int clusters =
      t.contains("clusters_per_package")
          ? r.small(t["clusters_per_package"], p + ".clusters_per_package", 1, Machine::kMaxCpus)
          : 1;
  if (cores % clusters != 0)
    r.fail(p + ".clusters_per_package",
           fmt::format("{} clusters do not divide {} cores per package", clusters, cores));
  std::string llc = t.contains("llc") ? r.string(t["llc"], p + ".llc") : "package";
  if (llc != "package" && llc != "cluster")
    r.fail(p + ".llc", fmt::format("expected \"package\" or \"cluster\", got \"{}\"", llc));
  // Without SMT the numbering of siblings does not arise; with it, it must be said.
  if (!t.contains("numbering") && threads > 1)
    r.fail(p + ".numbering",
           "missing: expected \"threads-last\" (CPU n and n + cores are siblings, as on most "
           "x86) or \"threads-adjacent\" (siblings are consecutive CPUs)");
  const std::string numbering =
      t.contains("numbering") ? r.string(t["numbering"], p + ".numbering") : "threads-last";
  if (numbering != "threads-last" && numbering != "threads-adjacent")
    r.fail(p + ".numbering",
           fmt::format("expected \"threads-last\" or \"threads-adjacent\", got \"{}\"", numbering));
  const int capacity =
      t.contains("capacity") ? r.small(t["capacity"], p + ".capacity", 1, 1024) : 1024;

  const std::int64_t n = std::int64_t{packages} * cores * threads;
  if (n > Machine::kMaxCpus)
    r.fail(p, fmt::format("{} x {} x {} = {} CPUs; at most {} are supported", packages, cores,
                          threads, n, Machine::kMaxCpus));
  std::vector<Cpu> cpus(static_cast<size_t>(n));
  const int total_cores = packages * cores;
  const int cores_per_cluster = cores / clusters;
  for (int pk = 0; pk < packages; ++pk)
    for (int c = 0; c < cores; ++c)
      for (int th = 0; th < threads; ++th) {
        const int id = numbering == "threads-last" ? th * total_cores + pk * cores + c
                                                   : (pk * cores + c) * threads + th;
        Cpu& cpu = cpus[static_cast<size_t>(id)];
        cpu.id = id;
        cpu.core = pk * cores + c;
        cpu.cluster = pk * clusters + c / cores_per_cluster;
        cpu.llc = llc == "cluster" ? cpu.cluster : pk;
        cpu.package = pk;
        cpu.node = pk;
        cpu.capacity = capacity;
      }
  return cpus;
}

std::vector<Cpu> read_cpu_list(const Reader& r, const json& arr) {
  const std::string p = "topology.cpus";
  if (!arr.is_array()) r.fail(p, "expected an array of CPU objects");
  if (arr.empty()) r.fail(p, "empty: a machine needs at least one CPU");
  if (arr.size() > static_cast<size_t>(Machine::kMaxCpus))
    r.fail(p, fmt::format("{} CPUs; at most {} are supported", arr.size(), Machine::kMaxCpus));
  std::vector<Cpu> cpus;
  cpus.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string cp = Reader::index(p, i);
    const json& o = arr[i];
    r.check_keys(o, cp, {"id", "core", "cluster", "llc", "package", "node", "capacity"},
                 {"id", "core", "llc", "package", "node"});
    Cpu c;
    c.id = r.small(o["id"], cp + ".id", 0, Machine::kMaxCpus);
    if (c.id != static_cast<int>(i))
      r.fail(cp + ".id",
             fmt::format("expected {} (CPU ids must be 0..n-1, listed in order), got {}", i, c.id));
    c.core = r.small(o["core"], cp + ".core", 0, kMaxId);
    c.llc = r.small(o["llc"], cp + ".llc", 0, kMaxId);
    c.cluster = o.contains("cluster") ? r.small(o["cluster"], cp + ".cluster", 0, kMaxId) : -1;
    c.package = r.small(o["package"], cp + ".package", 0, kMaxId);
    c.node = r.small(o["node"], cp + ".node", 0, kMaxId);
    c.capacity = o.contains("capacity") ? r.small(o["capacity"], cp + ".capacity", 1, 1024) : 1024;
    cpus.push_back(c);
  }
  // A missing cluster means "the cluster is the LLC"; give it an id no explicit cluster uses.
  int next = 0;
  for (const Cpu& c : cpus) next = std::max(next, c.cluster + 1);
  std::map<int, int> llc_cluster;
  for (Cpu& c : cpus)
    if (c.cluster < 0) {
      auto [it, fresh] = llc_cluster.emplace(c.llc, next);
      if (fresh) ++next;
      c.cluster = it->second;
    }
  return cpus;
}

Preemption read_preempt(const Reader& r, const json& v, const std::string& path) {
  const std::string s = r.string(v, path);
  if (s == "none") return Preemption::None;
  if (s == "voluntary") return Preemption::Voluntary;
  if (s == "full") return Preemption::Full;
  r.fail(path, fmt::format("expected \"none\", \"voluntary\" or \"full\", got \"{}\"", s));
}

const char* preempt_name(Preemption p) {
  switch (p) {
    case Preemption::None:
      return "none";
    case Preemption::Voluntary:
      return "voluntary";
    case Preemption::Full:
      return "full";
  }
  return "voluntary";
}

// The cost figures in file order, with the CostModel member each maps to; an optional one
// may be left out of a file (0, no source) and is written only when set.
struct CostField {
  const char* key;
  Cost CostModel::*member;
  bool optional = false;
};
constexpr CostField kCostFields[] = {
    {"context_switch", &CostModel::context_switch},
    {"ipi", &CostModel::ipi},
    {"idle_probe", &CostModel::idle_probe},
    {"cache_cold", &CostModel::cache_cold},
    {"wakeup", &CostModel::wakeup},
    {"pipe_write", &CostModel::pipe_write},
    {"pipe_read", &CostModel::pipe_read},
    {"socket_write", &CostModel::socket_write},
    {"socket_read", &CostModel::socket_read},
    {"timer_irq", &CostModel::timer_irq, true},
};

}  // namespace

std::vector<std::string_view> cost_names() {
  std::vector<std::string_view> out;
  for (const CostField& f : kCostFields) out.push_back(f.key);
  return out;
}

Cost* find_cost(CostModel& costs, std::string_view name) {
  for (const CostField& f : kCostFields)
    if (name == f.key) return &(costs.*f.member);
  return nullptr;
}

const Cost* find_cost(const CostModel& costs, std::string_view name) {
  return find_cost(const_cast<CostModel&>(costs), name);
}

namespace {

template <class J>
J build_json(const Machine& m) {
  J j;
  j["version"] = Machine::kFormatVersion;
  j["name"] = m.name;
  j["description"] = m.description;
  J cpus = J::array();
  for (const Cpu& c : m.cpus) {
    J o;
    o["id"] = c.id;
    o["core"] = c.core;
    o["cluster"] = c.cluster;
    o["llc"] = c.llc;
    o["package"] = c.package;
    o["node"] = c.node;
    o["capacity"] = c.capacity;
    cpus.push_back(std::move(o));
  }
  J topo;
  topo["source"] = m.topology_source;
  topo["cpus"] = std::move(cpus);
  j["topology"] = std::move(topo);
  J numa;
  numa["matrix"] = m.numa_distance;
  // RECLAIM_DISTANCE, the kernel's default, is left implicit as the presets leave it.
  if (m.node_reclaim_distance != 30) numa["node_reclaim_distance"] = m.node_reclaim_distance;
  numa["source"] = m.numa_source;
  j["numa_distance"] = std::move(numa);
  J smt;
  smt["value"] = m.smt_throughput;
  smt["source"] = m.smt_source;
  j["smt_throughput"] = std::move(smt);
  J idle = J::array();
  for (const IdleState& s : m.idle_states) {
    J o;
    o["name"] = s.name;
    o["exit_latency_ns"] = s.exit_latency_ns;
    o["target_residency_ns"] = s.target_residency_ns;
    o["polling"] = s.polling;
    if (s.cluster) o["cluster"] = true;
    o["source"] = s.source;
    o["real_exit_ns"] = s.real_exit_ns;
    o["real_exit_source"] = s.real_exit_source;
    idle.push_back(std::move(o));
  }
  j["idle_states"] = std::move(idle);
  J costs;
  for (const CostField& f : kCostFields) {
    if (f.optional && (m.costs.*f.member).ns == 0 && (m.costs.*f.member).source.empty()) continue;
    J o;
    o["ns"] = (m.costs.*f.member).ns;
    o["source"] = (m.costs.*f.member).source;
    costs[f.key] = std::move(o);
  }
  j["costs"] = std::move(costs);
  J kb;
  kb["hz"] = m.build.hz;
  kb["preempt"] = preempt_name(m.build.preempt);
  kb["nohz_idle"] = m.build.nohz_idle;
  kb["source"] = m.build.source;
  j["kernel_build"] = std::move(kb);
  return j;
}

std::string scalar_text(const nlohmann::ordered_json& v) {
  return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

bool all_scalar(const nlohmann::ordered_json& v) {
  for (const auto& c : v)
    if (c.is_structured()) return false;
  return true;
}

std::string compact(const nlohmann::ordered_json& v) {
  std::string out(1, v.is_object() ? '{' : '[');
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    if (v.is_object()) out += scalar_text(nlohmann::ordered_json(it.key())) + ": ";
    out += scalar_text(*it);
  }
  out += v.is_object() ? '}' : ']';
  return out;
}

// Objects and arrays made only of scalars go on one line when short (CPU records, matrix rows);
// everything else is indented by two spaces per level.
void pretty(const nlohmann::ordered_json& v, int indent, std::string& out) {
  if (!v.is_structured()) {
    out += scalar_text(v);
    return;
  }
  if (v.empty()) {
    out += v.is_object() ? "{}" : "[]";
    return;
  }
  if (all_scalar(v)) {
    std::string c = compact(v);
    if (indent + c.size() <= 100) {
      out += c;
      return;
    }
  }
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  out += v.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ",\n";
    first = false;
    out += pad;
    if (v.is_object()) out += scalar_text(nlohmann::ordered_json(it.key())) + ": ";
    pretty(*it, indent + 2, out);
  }
  out += "\n" + std::string(static_cast<size_t>(indent), ' ') + (v.is_object() ? "}" : "]");
}

// "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..." → the
// part after the position, on one line.
std::string parse_error_text(const std::string& what) {
  std::string s = what;
  size_t p = s.find("parse error");
  if (p != std::string::npos) {
    size_t colon = s.find(": ", p);
    if (colon != std::string::npos) s = s.substr(colon + 2);
  }
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

namespace {

// generated: the CPUs were expanded from topology.packages etc., so an error about a CPU's
// node names the packages (each is a node) rather than a topology.cpus entry the file lacks.
void validate(const Machine& m, const Reader& r, bool generated = false) {
  const size_t n = m.cpus.size();
  if (n == 0) r.fail("topology.cpus", "empty: a machine needs at least one CPU");
  if (n > static_cast<size_t>(Machine::kMaxCpus))
    r.fail("topology.cpus", fmt::format("{} CPUs; at most {} are supported", n, Machine::kMaxCpus));
  const int nodes = static_cast<int>(m.numa_distance.size());
  if (nodes == 0) r.fail("numa_distance.matrix", "empty: expected a node x node matrix");
  if (nodes > kMaxNodes)
    r.fail("numa_distance.matrix",
           fmt::format("{} nodes; at most {} are supported (MAX_NUMNODES)", nodes, kMaxNodes));

  // Every row of the matrix must be a node with CPUs (a CPU-less node's distances would make
  // NUMA levels of their own here); every CPU's node a row (checked per CPU below).
  // A CPU on a node outside the matrix is the error to name (per CPU, below) before the rows
  // that then have no CPU.
  std::vector<char> node_has_cpu(static_cast<size_t>(nodes), 0);
  bool nodes_in_range = true;
  for (const Cpu& c : m.cpus)
    if (c.node >= 0 && c.node < nodes)
      node_has_cpu[static_cast<size_t>(c.node)] = 1;
    else
      nodes_in_range = false;
  for (int node = 0; node < nodes && nodes_in_range; ++node)
    if (!node_has_cpu[static_cast<size_t>(node)])
      r.fail("numa_distance.matrix",
             fmt::format("has {} nodes, but no CPU is on node {}: nodes without CPUs are not "
                         "modelled",
                         nodes, node));

  // First CPU seen for each core / cluster / llc id, to check that groups nest.
  std::map<int, int> core_first, cluster_first, llc_first;
  auto cpu_path = [](size_t i, const char* field) {
    return fmt::format("topology.cpus[{}].{}", i, field);
  };
  for (size_t i = 0; i < n; ++i) {
    const Cpu& c = m.cpus[i];
    if (c.id != static_cast<int>(i))
      r.fail(cpu_path(i, "id"),
             fmt::format("expected {} (CPU ids must be 0..n-1, listed in order), got {}", i, c.id));
    for (auto [v, f] : {std::pair{c.core, "core"}, std::pair{c.cluster, "cluster"},
                        std::pair{c.llc, "llc"}, std::pair{c.package, "package"}})
      if (v < 0) r.fail(cpu_path(i, f), fmt::format("negative id {}", v));
    if (c.capacity < 1 || c.capacity > 1024)
      r.fail(cpu_path(i, "capacity"),
             fmt::format("{} is outside 1..1024 (SCHED_CAPACITY_SCALE)", c.capacity));
    // Without a matrix (e.g. a generated topology of two packages) say what to give.
    if (generated && c.node >= nodes)
      r.fail("topology.packages",
             fmt::format(
                 "each package is a NUMA node, so {0} packages need a {0} x {0} "
                 "numa_distance.matrix (10 on the diagonal, the SLIT distances "
                 "elsewhere); {1}",
                 m.cpus.back().package + 1,
                 m.numa_source == kSingleNodeSource
                     ? std::string("none is given")
                     : fmt::format("the one given has {} node{}", nodes, nodes == 1 ? "" : "s")));
    if (c.node < 0 || c.node >= nodes)
      r.fail(cpu_path(i, "node"),
             c.node >= nodes && m.numa_source == kSingleNodeSource
                 ? fmt::format("node {} does not exist: no numa_distance is given, so the machine "
                               "has one node (give a {} x {} matrix, 10 on the diagonal and the "
                               "SLIT distances elsewhere)",
                               c.node, c.node + 1, c.node + 1)
                 : fmt::format("node {} does not exist (numa_distance has {} node{})", c.node,
                               nodes, nodes == 1 ? "" : "s"));

    auto [ci, new_core] = core_first.emplace(c.core, static_cast<int>(i));
    if (!new_core) {
      const Cpu& s = m.cpus[static_cast<size_t>(ci->second)];
      auto differ = [&](int a, int b, const char* field, const char* what) {
        if (a != b)
          r.fail(cpu_path(i, field),
                 fmt::format("SMT siblings CPU {} and CPU {} (core {}) are in different {} ({} and "
                             "{}); core numbers a core across the whole machine, not per package "
                             "as sysfs core_id does",
                             s.id, c.id, c.core, what, b, a));
      };
      differ(c.llc, s.llc, "llc", "LLCs");
      differ(c.cluster, s.cluster, "cluster", "clusters");
      differ(c.package, s.package, "package", "packages");
      differ(c.node, s.node, "node", "NUMA nodes");
    }
    auto [cl, new_cluster] = cluster_first.emplace(c.cluster, static_cast<int>(i));
    if (!new_cluster) {
      const Cpu& s = m.cpus[static_cast<size_t>(cl->second)];
      if (s.llc != c.llc)
        r.fail(cpu_path(i, "llc"), fmt::format("cluster {} spans two LLCs ({} and {}): a cluster "
                                               "must lie inside one LLC",
                                               c.cluster, s.llc, c.llc));
    }
    auto [ll, new_llc] = llc_first.emplace(c.llc, static_cast<int>(i));
    if (!new_llc) {
      const Cpu& s = m.cpus[static_cast<size_t>(ll->second)];
      if (s.package != c.package)
        r.fail(cpu_path(i, "package"),
               fmt::format("LLC {} spans two packages ({} and {})", c.llc, s.package, c.package));
      // The MC domain would be wider than the NUMA node above it; the kernel's
      // build_sched_domain calls that "BUG: arch topology borken". x86 splits an LLC that
      // spans nodes (sub-NUMA clustering) into one per node; so must a machine file.
      if (s.node != c.node)
        r.fail(cpu_path(i, "node"),
               fmt::format("LLC {} spans two NUMA nodes ({} and {}): an LLC must lie inside one "
                           "node (with sub-NUMA clustering, give each node's CPUs their own llc)",
                           c.llc, s.node, c.node));
    }
  }

  for (int a = 0; a < nodes; ++a) {
    const std::string row = fmt::format("numa_distance.matrix[{}]", a);
    if (static_cast<int>(m.numa_distance[static_cast<size_t>(a)].size()) != nodes)
      r.fail(row, fmt::format("has {} entries; the matrix must be square ({} x {})",
                              m.numa_distance[static_cast<size_t>(a)].size(), nodes, nodes));
    for (int b = 0; b < nodes; ++b) {
      const int d = m.numa_distance[static_cast<size_t>(a)][static_cast<size_t>(b)];
      const std::string cell = fmt::format("{}[{}]", row, b);
      // Same rule as the kernel's numa_set_distance() (arch/x86/mm/numa.c): local distance is
      // LOCAL_DISTANCE (10), remote distances are larger and fit in a u8.
      if (a == b && d != 10)
        r.fail(cell, fmt::format("diagonal must be 10 (LOCAL_DISTANCE), got {}", d));
      if (a != b && (d <= 10 || d > 255))
        r.fail(cell, fmt::format("distance between different nodes must be in 11..255, got {}", d));
    }
  }

  if (!(m.smt_throughput > 0.0 && m.smt_throughput <= 1.0))
    r.fail("smt_throughput.value",
           fmt::format("{} is outside (0, 1] (per-thread speed with all siblings busy)",
                       m.smt_throughput));

  for (size_t i = 0; i < m.idle_states.size(); ++i) {
    const IdleState& s = m.idle_states[i];
    const std::string p = fmt::format("idle_states[{}]", i);
    if (s.name.empty()) r.fail(p + ".name", "empty");
    for (const auto& [key, ns] :
         {std::pair<const char*, Time>{"exit_latency_ns", s.exit_latency_ns},
          {"target_residency_ns", s.target_residency_ns},
          {"real_exit_ns", s.real_exit_ns}}) {
      if (ns < 0) r.fail(p + "." + key, "negative");
      if (ns > Machine::kMaxTimeNs)
        r.fail(p + "." + key,
               fmt::format("{} ns is over {} ns (1 s), the largest time a machine may give", ns,
                           Machine::kMaxTimeNs));
    }
    if (s.polling && i != 0)
      r.fail(p + ".polling", "only the first (shallowest) idle state may be a polling state");
    if (s.cluster && (i == 0 || m.idle_states[i - 1].polling))
      r.fail(p + ".cluster",
             "a cluster-level state needs a non-polling CPU-level state before it (what a CPU "
             "reaches while its cluster stays up)");
    if (!s.cluster && i > 0 && m.idle_states[i - 1].cluster)
      r.fail(p + ".cluster",
             "a CPU-level state after a cluster-level one: list CPU-level states first");
    if (i > 0 && s.exit_latency_ns < m.idle_states[i - 1].exit_latency_ns)
      r.fail(p + ".exit_latency_ns",
             fmt::format("{} is below the previous state's {}: list states shallowest first",
                         s.exit_latency_ns, m.idle_states[i - 1].exit_latency_ns));
  }
  for (const CostField& f : kCostFields) {
    const Time ns = (m.costs.*f.member).ns;
    if (ns < 0) r.fail(fmt::format("costs.{}.ns", f.key), fmt::format("negative cost {} ns", ns));
    if (ns > Machine::kMaxCostNs)
      r.fail(fmt::format("costs.{}.ns", f.key),
             fmt::format("cost {} ns is over {} ns (10 ms), the largest cost a machine may give",
                         ns, Machine::kMaxCostNs));
  }
  if (m.build.hz < 100 || m.build.hz > 1000)
    r.fail("kernel_build.hz", fmt::format("{} is outside 100..1000", m.build.hz));
}

}  // namespace

void validate_machine(const Machine& m, std::string_view origin) { validate(m, Reader(origin)); }

void normalize_ids(Machine& m) {
  std::map<int, int> core, cluster, llc, package;
  auto renumber = [](std::map<int, int>& map, int& id) {
    auto it = map.find(id);
    if (it == map.end()) it = map.emplace(id, static_cast<int>(map.size())).first;
    id = it->second;
  };
  for (Cpu& c : m.cpus) {  // CPUs are in id order, so ids follow the lowest CPU of each group
    renumber(core, c.core);
    renumber(cluster, c.cluster);
    renumber(llc, c.llc);
    renumber(package, c.package);
  }
}

namespace {

Machine read_machine(const json& j, const Reader& r) {
  r.expect_object(j, "");
  if (!j.contains("version"))
    r.fail("version", fmt::format("missing (expected {})", Machine::kFormatVersion));
  if (!j["version"].is_number_integer() ||
      j["version"].get<std::int64_t>() != Machine::kFormatVersion)
    r.fail("version", j["version"].is_number_integer()
                          ? fmt::format("unsupported version {} (this schedtwin reads version {})",
                                        j["version"].dump(), Machine::kFormatVersion)
                          : fmt::format("must be the number {}, not {}", Machine::kFormatVersion,
                                        j["version"].dump()));
  r.check_keys(j, "",
               {"version", "name", "description", "topology", "numa_distance", "smt_throughput",
                "idle_states", "costs", "kernel_build"},
               {"name", "topology", "idle_states", "costs", "kernel_build"});
  Machine m;
  m.name = r.string(j["name"], "name");
  if (m.name.empty()) r.fail("name", "empty");
  if (j.contains("description")) m.description = r.string(j["description"], "description");

  const json& t = j["topology"];
  r.expect_object(t, "topology");
  // The compact form's keys (expand_generator), beside "source"; the first found is named.
  const std::vector<std::string> generator_keys = {
      "packages", "cores_per_package", "threads_per_core", "clusters_per_package",
      "llc",      "numbering",         "capacity"};
  const bool generated = !t.contains("cpus");
  if (!generated) {
    for (const std::string& k : generator_keys)
      if (t.contains(k))
        r.fail(std::string("topology.") + k,
               "a topology is either an explicit \"cpus\" list or the generator keys "
               "(packages, cores_per_package, threads_per_core, ...), not both");
    r.check_keys(t, "topology", {"source", "cpus"}, {"cpus"});
    m.cpus = read_cpu_list(r, t["cpus"]);
  } else {
    std::set<std::string> allowed(generator_keys.begin(), generator_keys.end());
    allowed.insert("source");
    r.check_keys(t, "topology", allowed, {"packages", "cores_per_package", "threads_per_core"});
    m.cpus = expand_generator(r, t);
  }
  m.topology_source = r.optional_source(t, "topology");

  if (j.contains("numa_distance")) {
    const json& nd = j["numa_distance"];
    r.check_keys(nd, "numa_distance", {"matrix", "node_reclaim_distance", "source"}, {"matrix"});
    if (nd.contains("node_reclaim_distance"))
      m.node_reclaim_distance = static_cast<int>(
          r.small(nd["node_reclaim_distance"], "numa_distance.node_reclaim_distance", 10, 255));
    const json& mat = nd["matrix"];
    if (!mat.is_array() || mat.empty())
      r.fail("numa_distance.matrix", "expected a non-empty array of rows");
    if (mat.size() > static_cast<size_t>(kMaxNodes))
      r.fail(
          "numa_distance.matrix",
          fmt::format("{} nodes; at most {} are supported (MAX_NUMNODES)", mat.size(), kMaxNodes));
    for (size_t a = 0; a < mat.size(); ++a) {
      const std::string row = Reader::index("numa_distance.matrix", a);
      if (!mat[a].is_array()) r.fail(row, "expected an array of distances");
      std::vector<int> v;
      for (size_t b = 0; b < mat[a].size(); ++b)
        v.push_back(r.small(mat[a][b], Reader::index(row, b), 0, 255));
      m.numa_distance.push_back(std::move(v));
    }
    m.numa_source = r.optional_source(nd, "numa_distance");
  } else {
    m.numa_distance = {{10}};
    m.numa_source = kSingleNodeSource;
  }

  if (j.contains("smt_throughput")) {
    const json& s = j["smt_throughput"];
    r.check_keys(s, "smt_throughput", {"value", "source"}, {"value"});
    m.smt_throughput = r.number(s["value"], "smt_throughput.value");
    m.smt_source = r.optional_source(s, "smt_throughput");
  }

  const json& idle = j["idle_states"];
  if (!idle.is_array()) r.fail("idle_states", "expected an array (shallowest state first)");
  for (size_t i = 0; i < idle.size(); ++i) {
    const std::string p = Reader::index("idle_states", i);
    const json& o = idle[i];
    r.check_keys(o, p,
                 {"name", "exit_latency_ns", "target_residency_ns", "polling", "cluster", "source",
                  "real_exit_ns", "real_exit_source"},
                 {"name", "exit_latency_ns", "target_residency_ns", "real_exit_ns"});
    IdleState s;
    s.name = r.string(o["name"], p + ".name");
    s.exit_latency_ns = r.ns(o["exit_latency_ns"], p + ".exit_latency_ns");
    s.target_residency_ns = r.ns(o["target_residency_ns"], p + ".target_residency_ns");
    s.real_exit_ns = r.ns(o["real_exit_ns"], p + ".real_exit_ns");
    s.polling = o.contains("polling") ? r.boolean(o["polling"], p + ".polling") : false;
    s.cluster = o.contains("cluster") ? r.boolean(o["cluster"], p + ".cluster") : false;
    s.source = r.optional_source(o, p);
    if (o.contains("real_exit_source"))
      s.real_exit_source = r.string(o["real_exit_source"], p + ".real_exit_source");
    m.idle_states.push_back(std::move(s));
  }

  const json& costs = j["costs"];
  std::set<std::string> cost_keys;
  std::vector<std::string> cost_required;
  for (const CostField& f : kCostFields) {
    cost_keys.insert(f.key);
    if (!f.optional) cost_required.push_back(f.key);
  }
  r.check_keys(costs, "costs", cost_keys, cost_required);
  for (const CostField& f : kCostFields) {
    if (f.optional && !costs.contains(f.key)) continue;
    const std::string p = Reader::child("costs", f.key);
    const json& o = costs[f.key];
    r.check_keys(o, p, {"ns", "source"}, {"ns"});
    Cost& c = m.costs.*f.member;
    c.ns = r.ns(o["ns"], p + ".ns");
    c.source = r.optional_source(o, p);
  }

  const json& kb = j["kernel_build"];
  r.check_keys(kb, "kernel_build", {"hz", "preempt", "nohz_idle", "source"},
               {"hz", "preempt", "nohz_idle"});
  m.build.hz = r.small(kb["hz"], "kernel_build.hz", 100, 1000);
  m.build.preempt = read_preempt(r, kb["preempt"], "kernel_build.preempt");
  m.build.nohz_idle = r.boolean(kb["nohz_idle"], "kernel_build.nohz_idle");
  m.build.source = r.optional_source(kb, "kernel_build");

  validate(m, r, generated);
  normalize_ids(m);
  return m;
}

}  // namespace

Machine from_json(const json& j, std::string_view origin) {
  return read_machine(j, Reader(origin));
}

Machine parse_machine(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxMachineFileBytes)
    throw InputError(fmt::format("{}: {} bytes; a machine file may have at most {} bytes", origin,
                                 text.size(), kMaxMachineFileBytes));
  // byte is the 1-based offset of the last character read; turn it into line:column.
  auto error_at = [&](std::size_t byte, const std::string& what) {
    size_t pos = byte == 0 ? 0 : std::min<size_t>(byte - 1, text.size());
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InputError(fmt::format("{}:{}:{}: {}", origin, line, col, what));
  };
  // A SAX pass over the text finds where each value is, for the errors.
  std::size_t pos = 0;
  PositionIndex index(text, &pos);
  auto index_text = [&] {
    json::sax_parse(CountingIter{text.data(), &pos}, CountingIter{text.data() + text.size(), &pos},
                    &index);
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw error_at(e.byte, parse_error_text(e.what()));
  } catch (const json::out_of_range& e) {
    // A number beyond a double ("1e400"): this exception carries no position; the SAX pass
    // stops at the same place and says where.
    index_text();
    const std::string what = e.what();
    throw error_at(index.error_byte, what.substr(what.find("] ") + 2));
  }
  index_text();
  if (!index.duplicate.empty()) {
    const auto [line, col] = index.positions.at(index.duplicate);
    throw InputError(fmt::format("{}:{}:{}: {}: appears twice (first at {}:{})", origin,
                                 index.duplicate_at.first, index.duplicate_at.second,
                                 index.duplicate, line, col));
  }
  return read_machine(j, Reader(origin, &index.positions));
}

nlohmann::json to_json(const Machine& m) { return build_json<nlohmann::json>(m); }

std::string dump_machine_file(const Machine& m) {
  std::string out;
  pretty(build_json<nlohmann::ordered_json>(m), 0, out);
  out += '\n';
  return out;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [stem, text] : embedded_presets()) names.emplace_back(stem);
  names.emplace_back("host");
  std::sort(names.begin(), names.end());
  return names;
}

bool looks_like_machine_path(std::string_view name_or_path) {
  return name_or_path.find('/') != std::string_view::npos ||
         std::filesystem::path(std::string(name_or_path)).extension() == ".json";
}

Machine load_machine(std::string_view name_or_path, std::string_view option) {
  if (name_or_path == "host") return capture_sysfs("");
  for (const auto& [stem, text] : embedded_presets())
    if (stem == name_or_path) return parse_machine(text, fmt::format("presets/{}.json", stem));

  const std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (!looks_like_machine_path(name_or_path) && !std::filesystem::exists(path, ec)) {
      const std::vector<std::string> names = preset_names();
      throw InputError(
          fmt::format("{}{}unknown machine '{}': {}not a preset ({}) nor a machine file", option,
                      option.empty() ? "" : ": ", name_or_path,
                      engine::did_you_mean(name_or_path, {names.begin(), names.end()}, '\''),
                      fmt::join(names, ", ")));
    }
    throw InputError(
        fmt::format("{}{}{}: cannot read machine file ({})", option, option.empty() ? "" : ": ",
                    name_or_path,
                    std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  }
  if (std::filesystem::file_size(path, ec) > kMaxMachineFileBytes && !ec)
    throw InputError(fmt::format("{}: larger than {} bytes, the limit for a machine file",
                                 name_or_path, kMaxMachineFileBytes));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (!in && !in.eof()) throw InputError(fmt::format("{}: cannot read machine file", name_or_path));
  return parse_machine(buf.str(), name_or_path);
}

namespace {

// sched_init_numa's spans: node a's span at distance d is every node within d of it (its
// own row). A NUMA level's groups are the spans one level down of the nodes in its span;
// the kernel builds them as overlapping groups with balance masks, the model as one group
// per child span. The two agree while those child spans lie inside the level's span and
// are disjoint or equal; on a ring of four nodes they do not.
std::string numa_overlap_note(const std::vector<std::vector<int>>& d) {
  const size_t n = d.size();
  std::set<int> levels;
  for (const auto& row : d) levels.insert(row.begin(), row.end());
  const std::vector<int> dist(levels.begin(), levels.end());
  auto span = [&](size_t a, int within) {
    std::vector<size_t> s;
    for (size_t b = 0; b < n; ++b)
      if (d[a][b] <= within) s.push_back(b);
    return s;
  };
  for (size_t k = 1; k < dist.size(); ++k)
    for (size_t a = 0; a < n; ++a) {
      const std::vector<size_t> top = span(a, dist[k]);
      for (size_t b : top)
        for (size_t c : top) {
          const std::vector<size_t> cb = span(b, dist[k - 1]), cc = span(c, dist[k - 1]);
          std::vector<size_t> common;
          std::set_intersection(cb.begin(), cb.end(), cc.begin(), cc.end(),
                                std::back_inserter(common));
          const bool inside = std::includes(top.begin(), top.end(), cb.begin(), cb.end());
          if (inside && (cb == cc || common.empty())) continue;
          return fmt::format(
              "numa_distance.matrix: at distance {} the groups of node {}'s NUMA level (the "
              "distance-{} spans of nodes {} and {}) {}: the kernel builds overlapping groups "
              "with balance masks there, the model one group per span, so balancing at that "
              "level differs (README, known divergences: NUMA groups beyond two hops)",
              dist[k], a, dist[k - 1], b, c, inside ? "overlap" : "reach outside its span");
        }
    }
  return {};
}

}  // namespace

std::vector<std::string> machine_notes(const Machine& m) {
  std::vector<std::string> notes;
  const size_t n = m.numa_distance.size();
  for (size_t a = 0; a < n && notes.empty(); ++a)
    for (size_t b = a + 1; b < n; ++b)
      if (m.numa_distance[a][b] != m.numa_distance[b][a]) {
        notes.push_back(fmt::format(
            "numa_distance.matrix is not symmetric ([{}][{}] = {}, [{}][{}] = {}): the kernel "
            "accepts it (warning \"Node-distance not symmetric\" under sched_debug) and so does "
            "the model, which builds each node's NUMA spans from its own row",
            a, b, m.numa_distance[a][b], b, a, m.numa_distance[b][a]));
        break;
      }
  if (std::string o = numa_overlap_note(m.numa_distance); !o.empty()) notes.push_back(o);
  for (const Cpu& c : m.cpus)
    if (c.capacity != m.cpus.front().capacity) {
      notes.push_back(fmt::format(
          "CPU capacities differ (CPU {}: {}, CPU {}: {}): the model scales work and load by "
          "them but has no asymmetric-capacity path (SD_ASYM_CPUCAPACITY and the flags sd_init "
          "changes with it, misfit tasks, select_idle_capacity)",
          m.cpus.front().id, m.cpus.front().capacity, c.id, c.capacity));
      break;
    }
  return notes;
}

}  // namespace schedtwin::machine
