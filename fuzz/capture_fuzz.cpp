// libFuzzer harness: sysfs capture (machine/capture capture_sysfs). The input describes a
// small tree under <sysroot>/sys/devices/system, one entry per line:
//   cpu/online=0-3              a file (the content, then "\n" as sysfs writes it)
//   node/node0                  a line without '=' is a directory
// Path components are [A-Za-z0-9_.-]+ (not "." or ".."), at most kMaxDepth of them; other
// lines are skipped, so nothing is written outside the temporary sysroot (a directory under
// $TMPDIR, else /dev/shm, else /tmp, made once per process). The tree is made equal to the
// input's, then captured; a captured machine goes through the dump round trip and kSimNs of
// a fixed task set, as in machine_fuzz. See README.md.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_sim.h"
#include "machine/capture.h"

namespace {

namespace fs = std::filesystem;

constexpr int kMaxDepth = 8;
constexpr std::size_t kMaxEntries = 4096;

bool safe_relative_path(std::string_view p) {
  if (p.empty() || p.size() > 256) return false;
  int depth = 0;
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t slash = p.find('/', start);
    if (slash == std::string_view::npos) slash = p.size();
    const std::string_view part = p.substr(start, slash - start);
    if (part.empty() || part == "." || part == ".." || ++depth > kMaxDepth) return false;
    for (char ch : part)
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '_' || ch == '.' || ch == '-'))
        return false;
    start = slash + 1;
  }
  return true;
}

// What an input asks for, applied line by line as a shell would: a line is skipped when a
// file stands where it needs a directory or a directory where it writes a file; a later
// line for the same file replaces its content.
struct Tree {
  std::map<std::string, std::string> files;  // path -> content
  std::set<std::string> dirs;
};

Tree plan(std::string_view text) {
  Tree t;
  std::size_t lines = 0;
  for (std::size_t pos = 0; pos < text.size() && lines < kMaxEntries; ++lines) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const std::size_t eq = line.find('=');
    const std::string path(line.substr(0, eq));
    if (!safe_relative_path(path)) continue;
    std::vector<std::string> parents;
    for (std::size_t s = path.find('/'); s != std::string::npos; s = path.find('/', s + 1))
      parents.push_back(path.substr(0, s));
    if (std::any_of(parents.begin(), parents.end(),
                    [&](const std::string& q) { return t.files.count(q) > 0; }))
      continue;
    if (eq == std::string_view::npos) {
      if (t.files.count(path)) continue;
      t.dirs.insert(path);
    } else {
      if (t.dirs.count(path)) continue;
      t.files[path] = std::string(line.substr(eq + 1)) + "\n";  // as sysfs shows it
    }
    t.dirs.insert(parents.begin(), parents.end());
  }
  return t;
}

[[noreturn]] void fs_failed(const fs::path& p, const std::error_code& ec) {
  std::fprintf(stderr, "capture_fuzz: %s: %s\n", p.c_str(), ec.message().c_str());
  std::abort();
}

// The sysroot of one fuzzing process, removed at exit. The tree on disk only caches the
// previous input's tree: materialise() makes it equal to the new input's exactly (rewriting
// only what differs, which is most of the speed of this harness), so a run's outcome depends
// on its input alone.
class Sysroot {
 public:
  Sysroot() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp ? tmp : (fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp");
    std::string templ = base + "/schedtwin-capture-fuzz-XXXXXX";
    if (!mkdtemp(templ.data())) std::abort();
    root_ = templ;
    system_ = root_ / "sys/devices/system";
    std::error_code ec;
    fs::create_directories(system_, ec);
    if (ec) fs_failed(system_, ec);
  }
  ~Sysroot() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Sysroot(const Sysroot&) = delete;
  Sysroot& operator=(const Sysroot&) = delete;

  const fs::path& root() const { return root_; }

  void materialise(Tree want) {
    std::error_code ec;
    for (const auto& [p, content] : have_.files)
      if (!want.files.count(p) && !fs::remove(system_ / p, ec)) fs_failed(system_ / p, ec);
    // Deepest first: "a/b" sorts after "a".
    for (auto it = have_.dirs.rbegin(); it != have_.dirs.rend(); ++it)
      if (!want.dirs.count(*it) && fs::exists(system_ / *it)) {
        fs::remove_all(system_ / *it, ec);
        if (ec) fs_failed(system_ / *it, ec);
      }
    for (const std::string& d : want.dirs)
      if (!have_.dirs.count(d)) {
        fs::create_directories(system_ / d, ec);
        if (ec) fs_failed(system_ / d, ec);
      }
    for (const auto& [p, content] : want.files) {
      auto old = have_.files.find(p);
      if (old != have_.files.end() && old->second == content) continue;
      std::ofstream out(system_ / p, std::ios::binary | std::ios::trunc);
      out << content;
      if (!out) fs_failed(system_ / p, std::make_error_code(std::errc::io_error));
    }
    have_ = std::move(want);
  }

 private:
  fs::path root_, system_;
  Tree have_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedtwin;
  // Harness state, not the library's: the scratch directory of this process.
  static Sysroot sysroot;
  sysroot.materialise(plan(std::string_view(reinterpret_cast<const char*>(data), size)));

  machine::Machine m;
  try {
    m = machine::capture_sysfs(sysroot.root().string());
  } catch (const InputError&) {
    return 0;  // the expected outcome for a bad tree
  }
  fuzz::check_round_trip(m);
  try {
    fuzz::simulate_machine(m);
  } catch (const InputError& e) {
    fuzz::finding(std::string("captured machine refused by the simulation: ") + e.what());
  }
  return 0;
}
