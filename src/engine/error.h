// Errors that reach the user as one line on stderr (DESIGN.md §4).
#pragma once
#include <stdexcept>
#include <string>

namespace schedtwin {

// Bad input (a file's content, an unknown machine or feature name, ...): exit status 1.
// The message is the whole line, already naming the file and line:column or the option.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Command-line misuse detected after parsing (conflicting options ...): exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace schedtwin
