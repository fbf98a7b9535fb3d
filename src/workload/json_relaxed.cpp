#include "workload/json_relaxed.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/counting_iter.h"
#include "engine/error.h"

namespace schedtwin::workload {

JNode::JNode() = default;

const char* JNode::kind_name() const {
  switch (kind) {
    case Kind::Null:
      return "null";
    case Kind::Bool:
      return "a boolean";
    case Kind::Int:
    case Kind::Float:
      return "a number";
    case Kind::String:
      return "a string";
    case Kind::Object:
      return "an object";
    case Kind::Array:
      return "an array";
  }
  return "?";
}

namespace {

// Blanks comments and trailing commas (keeping newlines, so positions do not move) and
// gives bare object keys a null value. Insertions are recorded to map positions back.
struct Cleaned {
  std::string text;
  std::vector<std::pair<std::size_t, std::size_t>> inserts;  // (position in output, length)
  std::size_t open_comment = std::string::npos;  // where a "/*" without "*/" starts (output)
};

Cleaned clean(std::string_view in) {
  Cleaned out;
  std::string& s = out.text;
  s.reserve(in.size() + 16);
  // Container stack to know whether a string is an object key.
  std::vector<char> stack;
  bool expect_key = false;
  size_t i = 0;
  auto next_significant = [&](size_t from) {
    size_t j = from;
    while (j < in.size()) {
      char c = in[j];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++j;
      } else if (c == '/' && j + 1 < in.size() && in[j + 1] == '/') {
        while (j < in.size() && in[j] != '\n') ++j;
      } else if (c == '/' && j + 1 < in.size() && in[j + 1] == '*') {
        size_t e = in.find("*/", j + 2);
        j = e == std::string_view::npos ? in.size() : e + 2;
      } else {
        return j;
      }
    }
    return j;
  };
  while (i < in.size()) {
    char c = in[i];
    if (c == '"') {
      size_t j = i + 1;
      while (j < in.size() && in[j] != '"') j += in[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, in.size());
      s.append(in.substr(i, j - i));
      if (!stack.empty() && stack.back() == '{' && expect_key) {
        size_t k = next_significant(j);
        if (k < in.size() && (in[k] == ',' || in[k] == '}')) {
          out.inserts.emplace_back(s.size(), 5);
          s += ":null";
        }
        expect_key = false;
      }
      i = j;
      continue;
    }
    if (c == '/' && i + 1 < in.size() && (in[i + 1] == '/' || in[i + 1] == '*')) {
      size_t end = in[i + 1] == '/' ? in.find('\n', i) : in.find("*/", i + 2);
      if (end == std::string_view::npos && in[i + 1] == '*' &&
          out.open_comment == std::string::npos)
        out.open_comment = s.size();
      end = end == std::string_view::npos ? in.size() : (in[i + 1] == '/' ? end : end + 2);
      for (size_t k = i; k < end; ++k) s += in[k] == '\n' ? '\n' : ' ';
      i = end;
      continue;
    }
    if (c == ',') {
      size_t k = next_significant(i + 1);
      // A trailing comma follows a value: in "[1,,]" or "{," the comma is an error to report.
      size_t b = s.size();
      while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\n' || s[b - 1] == '\r'))
        --b;
      const bool after_value = b > 0 && s[b - 1] != ',' && s[b - 1] != '{' && s[b - 1] != '[';
      if (after_value && k < in.size() && (in[k] == '}' || in[k] == ']')) {
        s += ' ';
        ++i;
        continue;
      }
      expect_key = !stack.empty() && stack.back() == '{';
    } else if (c == '{') {
      stack.push_back('{');
      expect_key = true;
    } else if (c == '[') {
      stack.push_back('[');
      expect_key = false;
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      expect_key = false;
    } else if (c == ':') {
      expect_key = false;
    }
    s += c;
    ++i;
  }
  return out;
}

using engine::CountingIter;

class Builder : public nlohmann::json_sax<nlohmann::json> {
 public:
  Builder(const Cleaned& c, std::string_view original, std::string_view origin,
          const std::size_t* pos)
      : c_(c), orig_(original), origin_(origin), pos_(pos) {
    for (std::size_t k = 0; k < orig_.size(); ++k) {
      if (k % kBlock == 0) block_cont_.push_back(cont_);
      if (orig_[k] == '\n') newlines_.push_back(k);
      if ((static_cast<unsigned char>(orig_[k]) & 0xC0) == 0x80) ++cont_;
    }
    std::size_t sum = 0;
    for (const auto& [at, len] : c_.inserts) {
      inserted_before_.push_back(sum);
      sum += len;
    }
  }

  JNode root;
  std::string error;

  bool null() override { return add(JNode{}); }
  bool boolean(bool v) override {
    JNode n;
    n.kind = JNode::Kind::Bool;
    n.b = v;
    return add(std::move(n));
  }
  bool number_integer(number_integer_t v) override {
    JNode n;
    n.kind = JNode::Kind::Int;
    n.i = v;
    n.u = v < 0 ? 0 : static_cast<std::uint64_t>(v);
    return add(std::move(n));
  }
  bool number_unsigned(number_unsigned_t v) override {
    JNode n;
    n.kind = JNode::Kind::Int;
    n.above_int64 = v > static_cast<number_unsigned_t>(INT64_MAX);
    n.i = n.above_int64 ? INT64_MAX : static_cast<std::int64_t>(v);
    n.u = v;
    return add(std::move(n));
  }
  bool number_float(number_float_t v, const string_t&) override {
    JNode n;
    n.kind = JNode::Kind::Float;
    n.f = v;
    return add(std::move(n));
  }
  bool string(string_t& v) override {
    JNode n;
    n.kind = JNode::Kind::String;
    n.s = v;
    return add(std::move(n));
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    JNode n;
    n.kind = JNode::Kind::Object;
    return open(std::move(n));
  }
  bool key(string_t& k) override {
    pending_key_ = k;
    position(JNode::Kind::String, key_line_, key_col_);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    JNode n;
    n.kind = JNode::Kind::Array;
    return open(std::move(n));
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    int line, col;
    locate(position == 0 ? 0 : position - 1, line, col);
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error while
    // parsing value - invalid literal; last read: 'x'" -> keep what follows the position;
    // "[json.exception.out_of_range.406] number overflow parsing '1e400'" has none.
    auto p = what.find(": ");
    if (p != std::string::npos)
      what = what.substr(p + 2);
    else if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
      what = what.substr(what.find("] ") + 2);
    error = fmt::format("{}:{}:{}: {}", origin_, line, col, what);
    return false;
  }

  // Line and column in the original text of a position in the cleaned text (columns count
  // characters, not UTF-8 bytes). O(log n): an error or a value position on a large file must
  // not rescan the text from its start.
  void locate(std::size_t cleaned_pos, int& line, int& col) const {
    // Take away the text clean() inserted before cleaned_pos (all of it but maybe the last).
    std::size_t p = cleaned_pos;
    auto ins = std::lower_bound(c_.inserts.begin(), c_.inserts.end(), cleaned_pos,
                                [](const auto& e, std::size_t at) { return e.first < at; });
    if (ins != c_.inserts.begin()) {
      const std::size_t k = static_cast<std::size_t>(ins - c_.inserts.begin()) - 1;
      p -= inserted_before_[k] + std::min(c_.inserts[k].second, cleaned_pos - c_.inserts[k].first);
    }
    p = std::min(p, orig_.size());
    auto it = std::upper_bound(newlines_.begin(), newlines_.end(), p);
    line = static_cast<int>(it - newlines_.begin()) + 1;
    const std::size_t start = it == newlines_.begin() ? 0 : *(it - 1) + 1;
    col = static_cast<int>((p - start) - (continuation_bytes(p) - continuation_bytes(start))) + 1;
  }

 private:
  // Where the token the parser has just handed over starts. *pos_ counts the characters the
  // lexer has consumed: a string or key ends at its closing quote, a literal at its last
  // letter, a bracket is the last character, and a number is followed by one character of
  // look-ahead (none at the end of the text).
  void position(JNode::Kind token, int& line, int& col) const {
    const std::string& t = c_.text;
    const std::size_t end = std::min(*pos_, t.size());  // one past the last character read
    std::size_t p = end == 0 ? 0 : end - 1;
    auto is_num = [](char ch) {
      return (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+' || ch == 'e' ||
             ch == 'E';
    };
    switch (token) {
      case JNode::Kind::Object:
      case JNode::Kind::Array:
        break;
      case JNode::Kind::String:  // back from the closing quote to the opening one
        while (p > 0) {
          --p;
          std::size_t backslashes = 0;
          while (backslashes < p && t[p - 1 - backslashes] == '\\') ++backslashes;
          if (t[p] == '"' && backslashes % 2 == 0) break;
        }
        break;
      case JNode::Kind::Int:
      case JNode::Kind::Float:
        p = end;
        if (p > 0 && !is_num(t[p - 1])) --p;
        while (p > 0 && is_num(t[p - 1])) --p;
        break;
      default:  // true, false, null
        p = end;
        while (p > 0 && std::isalpha(static_cast<unsigned char>(t[p - 1]))) --p;
        break;
    }
    locate(p, line, col);
  }
  // Every value costs a JNode (about 150 bytes): bound their number, not only the file size.
  bool count_value(JNode::Kind kind) {
    if (++values_ <= kMaxJsonValues) return true;
    int line, col;
    position(kind, line, col);
    error = fmt::format("{}:{}:{}: more than {} JSON values in the file", origin_, line, col,
                        kMaxJsonValues);
    return false;
  }
  bool add(JNode n) {
    if (!count_value(n.kind)) return false;
    if (stack_.empty()) {
      position(n.kind, n.line, n.col);
      root = std::move(n);
      return true;
    }
    JNode& parent = *stack_.back();
    if (parent.kind == JNode::Kind::Object) {
      n.line = key_line_;
      n.col = key_col_;
      parent.members.emplace_back(std::move(pending_key_), std::move(n));
    } else {
      position(n.kind, n.line, n.col);
      parent.items.push_back(std::move(n));
    }
    return true;
  }
  bool open(JNode n) {
    if (!count_value(n.kind)) return false;
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth) {
      int line, col;
      position(n.kind, line, col);
      error =
          fmt::format("{}:{}:{}: nesting deeper than {} levels", origin_, line, col, kMaxJsonDepth);
      return false;
    }
    JNode* where;
    if (stack_.empty()) {
      position(n.kind, n.line, n.col);
      root = std::move(n);
      where = &root;
    } else {
      JNode& parent = *stack_.back();
      if (parent.kind == JNode::Kind::Object) {
        n.line = key_line_;
        n.col = key_col_;
        parent.members.emplace_back(std::move(pending_key_), std::move(n));
        where = &parent.members.back().second;
      } else {
        position(n.kind, n.line, n.col);
        parent.items.push_back(std::move(n));
        where = &parent.items.back();
      }
    }
    stack_.push_back(where);
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  // UTF-8 continuation bytes in orig_[0, p): counted per block, then within the block.
  std::size_t continuation_bytes(std::size_t p) const {
    if (p >= orig_.size()) return cont_;
    std::size_t n = block_cont_[p / kBlock];
    for (std::size_t k = p / kBlock * kBlock; k < p; ++k)
      n += (static_cast<unsigned char>(orig_[k]) & 0xC0) == 0x80;
    return n;
  }

  static constexpr std::size_t kBlock = 256;
  const Cleaned& c_;
  std::string_view orig_;
  std::vector<std::size_t> newlines_;         // offsets of '\n' in orig_
  std::vector<std::size_t> block_cont_;       // continuation bytes before each kBlock-byte block
  std::size_t cont_ = 0;                      // in all of orig_
  std::vector<std::size_t> inserted_before_;  // total length of c_.inserts[0, k)
  std::string_view origin_;
  const std::size_t* pos_;
  std::vector<JNode*> stack_;
  std::size_t values_ = 0;
  std::string pending_key_;
  int key_line_ = 0, key_col_ = 0;
};

}  // namespace

JNode parse_relaxed_json(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxJsonBytes)
    throw InputError(fmt::format("{}: file larger than {} bytes (the limit for JSON input)", origin,
                                 kMaxJsonBytes));
  Cleaned c = clean(text);
  std::size_t pos = 0;
  Builder b(c, text, origin, &pos);
  if (c.open_comment != std::string::npos) {
    int line, col;
    b.locate(c.open_comment, line, col);
    throw InputError(
        fmt::format("{}:{}:{}: comment not closed; expected \"*/\"", origin, line, col));
  }
  CountingIter first{c.text.data(), &pos};
  CountingIter last{c.text.data() + c.text.size(), &pos};
  bool ok = nlohmann::json::sax_parse(first, last, &b, nlohmann::json::input_format_t::json, true);
  if (!ok) throw InputError(b.error.empty() ? fmt::format("{}: malformed JSON", origin) : b.error);
  return std::move(b.root);
}

JNode read_relaxed_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: is a directory; expected a JSON file", path));
  if (path == "-" && !std::filesystem::exists(path, ec))
    throw InputError(
        "-: standard input is read only by `schedtwin rt-app -`; here give the file's name");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(fmt::format("{}: cannot open file ({})", path, std::strerror(errno)));
  return read_relaxed_json_stream(f, path);
}

JNode read_relaxed_json_stream(std::istream& in, const std::string& origin) {
  // Stop reading past the limit: a huge file is refused without loading it.
  std::string text;
  char buf[1 << 16];
  while (text.size() <= kMaxJsonBytes && (in.read(buf, sizeof buf) || in.gcount() > 0))
    text.append(buf, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw InputError(fmt::format("{}: cannot read file", origin));
  return parse_relaxed_json(text, origin);
}

}  // namespace schedtwin::workload
