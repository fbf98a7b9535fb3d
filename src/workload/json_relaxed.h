// JSON as real rt-app users write it: C comments, trailing commas, duplicate keys
// (kept, in file order) and bare keys such as `"suspend",` (a key with no value).
// Parsed with nlohmann::json's SAX interface after a pass that blanks comments and
// trailing commas, so line:column positions stay those of the user's file.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace schedtwin::workload {

struct JNode {
  enum class Kind : std::uint8_t { Null, Bool, Int, Float, String, Object, Array };
  // Defined out of line: clang 14 with libstdc++ 12 cannot instantiate the implicit one
  // while std::pair<std::string, JNode> below is still incomplete.
  JNode();
  Kind kind = Kind::Null;
  bool b = false;
  std::int64_t i = 0;        // an integer above INT64_MAX is INT64_MAX here, and
  bool above_int64 = false;  // this is set; `u` holds it
  std::uint64_t u = 0;       // the value of a non-negative integer
  double f = 0;
  std::string s;
  std::vector<std::pair<std::string, JNode>> members;  // objects, in file order, duplicates kept
  std::vector<JNode> items;                            // arrays
  int line = 0, col = 0;                               // where the value (or its key) starts

  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double number() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
  const char* kind_name() const;
};

inline constexpr std::size_t kMaxJsonBytes = 16u << 20;  // 16 MiB
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxJsonValues = 1'000'000;  // numbers, strings, objects, ...

// Throws InputError "ORIGIN:LINE:COL: ..." on malformed input or beyond the limits above.
// Columns count characters (UTF-8 sequences), not bytes.
JNode parse_relaxed_json(std::string_view text, std::string_view origin);
// Reads the file (InputError if unreadable or larger than kMaxJsonBytes) and parses it.
JNode read_relaxed_json_file(const std::string& path);
// The same for a stream (standard input for a file named "-"), errors naming `origin`.
JNode read_relaxed_json_stream(std::istream& in, const std::string& origin);

}  // namespace schedtwin::workload
