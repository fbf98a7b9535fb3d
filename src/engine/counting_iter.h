// An input iterator over a character buffer that counts the characters consumed, so that a
// SAX parser (nlohmann::json::sax_parse) can tell its callbacks where in the text they are.
#pragma once
#include <cstddef>
#include <iterator>

namespace schedtwin::engine {

struct CountingIter {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p;
  std::size_t* pos;  // incremented once per character consumed
  const char& operator*() const { return *p; }
  CountingIter& operator++() {
    ++p;
    ++*pos;
    return *this;
  }
  bool operator==(const CountingIter& o) const { return p == o.p; }
  bool operator!=(const CountingIter& o) const { return p != o.p; }
};

}  // namespace schedtwin::engine
