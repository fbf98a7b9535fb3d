#include "workload/json_relaxed.h"

#include <fmt/core.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"

namespace schedtwin::workload {

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
      end = end == std::string_view::npos ? in.size() : (in[i + 1] == '/' ? end : end + 2);
      for (size_t k = i; k < end; ++k) s += in[k] == '\n' ? '\n' : ' ';
      i = end;
      continue;
    }
    if (c == ',') {
      size_t k = next_significant(i + 1);
      if (k < in.size() && (in[k] == '}' || in[k] == ']')) {
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

// Counts characters as nlohmann's lexer consumes them, so SAX callbacks know where they are.
struct CountingIter {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p;
  std::size_t* pos;
  const char& operator*() const { return *p; }
  CountingIter& operator++() {
    ++p;
    ++*pos;
    return *this;
  }
  bool operator==(const CountingIter& o) const { return p == o.p; }
  bool operator!=(const CountingIter& o) const { return p != o.p; }
};

class Builder : public nlohmann::json_sax<nlohmann::json> {
 public:
  Builder(const Cleaned& c, std::string_view original, std::string_view origin, const std::size_t* pos)
      : c_(c), orig_(original), origin_(origin), pos_(pos) {}

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
    return add(std::move(n));
  }
  bool number_unsigned(number_unsigned_t v) override {
    JNode n;
    n.kind = JNode::Kind::Int;
    n.i = v > static_cast<number_unsigned_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v);
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
    position(key_line_, key_col_);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    JNode n;
    n.kind = JNode::Kind::Array;
    return open(std::move(n));
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    int line, col;
    locate(position == 0 ? 0 : position - 1, line, col);
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error while
    // parsing value - invalid literal; last read: 'x'" -> keep what follows the position.
    auto p = what.find(": ");
    if (p != std::string::npos) what = what.substr(p + 2);
    error = fmt::format("{}:{}:{}: {}", origin_, line, col, what);
    return false;
  }

  // Line and column in the original text of a position in the cleaned text.
  void locate(std::size_t cleaned_pos, int& line, int& col) const {
    std::size_t p = cleaned_pos;
    for (auto [at, len] : c_.inserts)
      if (at < cleaned_pos) p -= std::min(len, cleaned_pos - at);
    p = std::min(p, orig_.size());
    line = 1;
    col = 1;
    for (std::size_t k = 0; k < p; ++k) {
      if (orig_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  }

 private:
  void position(int& line, int& col) const {
    // The lexer has read one character past the token: step back to the token's last one.
    std::size_t p = *pos_ > 1 ? *pos_ - 2 : 0;
    // Walk back over the token to its start.
    const std::string& t = c_.text;
    if (p < t.size() && t[p] == '"') {
      std::size_t q = p;
      while (q > 0) {
        --q;
        if (t[q] == '"' && (q == 0 || t[q - 1] != '\\')) break;
      }
      p = q;
    } else {
      while (p > 0 && (std::isalnum(static_cast<unsigned char>(t[p - 1])) || t[p - 1] == '.' ||
                       t[p - 1] == '-' || t[p - 1] == '+'))
        --p;
    }
    locate(p, line, col);
  }
  bool add(JNode n) {
    if (stack_.empty()) {
      position(n.line, n.col);
      root = std::move(n);
      return true;
    }
    JNode& parent = *stack_.back();
    if (parent.kind == JNode::Kind::Object) {
      n.line = key_line_;
      n.col = key_col_;
      parent.members.emplace_back(std::move(pending_key_), std::move(n));
    } else {
      position(n.line, n.col);
      parent.items.push_back(std::move(n));
    }
    return true;
  }
  bool open(JNode n) {
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth) {
      int line, col;
      locate(*pos_, line, col);
      error = fmt::format("{}:{}:{}: nesting deeper than {} levels", origin_, line, col, kMaxJsonDepth);
      return false;
    }
    JNode* where;
    if (stack_.empty()) {
      position(n.line, n.col);
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
        position(n.line, n.col);
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

  const Cleaned& c_;
  std::string_view orig_;
  std::string_view origin_;
  const std::size_t* pos_;
  std::vector<JNode*> stack_;
  std::string pending_key_;
  int key_line_ = 0, key_col_ = 0;
};

}  // namespace

JNode parse_relaxed_json(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxJsonBytes)
    throw InputError(fmt::format("{}: file larger than {} bytes", origin, kMaxJsonBytes));
  Cleaned c = clean(text);
  std::size_t pos = 0;
  Builder b(c, text, origin, &pos);
  CountingIter first{c.text.data(), &pos};
  CountingIter last{c.text.data() + c.text.size(), &pos};
  bool ok = nlohmann::json::sax_parse(first, last, &b, nlohmann::json::input_format_t::json, true);
  if (!ok) throw InputError(b.error.empty() ? fmt::format("{}: malformed JSON", origin) : b.error);
  return std::move(b.root);
}

JNode read_relaxed_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(fmt::format("{}: cannot open file", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  return parse_relaxed_json(text, path);
}

}  // namespace schedtwin::workload
