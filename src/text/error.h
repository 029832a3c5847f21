// Errors the user can fix: bad YAML, unknown keys, wrong types, conflicting output.
//
// Every such error carries where it was found (file:line:column, 1-based), the key path it is
// about, what is wrong, and where possible what to do. `main` maps them to exit codes
// (docs/exit-codes.md); nothing below main prints or exits.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

namespace sweepbench {

// A place in an input: a file (or a pseudo-source such as "--set train.lr=1"), line and column.
// line == 0 means the place is the whole source.
struct Mark {
  std::shared_ptr<const std::string> source;
  int line = 0;
  int column = 0;

  static Mark in(const std::string& source, int line = 0, int column = 0);
  bool known() const { return source != nullptr; }
  // "sweeps/x.yaml:12:5", "sweeps/x.yaml", "--set a=b" or "" when unknown.
  std::string str() const;
};

// What kind of mistake it is decides the exit code.
enum class ErrorKind {
  kInput,     // a config, sweep file or command line the user must fix (exit 2)
  kConflict,  // the output already holds something that differs (exit 3)
  kIo,        // the file system refused (exit 4)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, Mark mark, std::string key, std::string message, std::string hint = {});
  static Error input(Mark mark, std::string key, std::string message, std::string hint = {}) {
    return Error(ErrorKind::kInput, std::move(mark), std::move(key), std::move(message),
                 std::move(hint));
  }

  ErrorKind kind() const { return kind_; }
  const Mark& mark() const { return mark_; }
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }
  // what() without the location: "key: message (hint)".
  std::string detail() const;

 private:
  ErrorKind kind_;
  Mark mark_;
  std::string key_;
  std::string message_;
  std::string hint_;
};

// Exit codes shared by every binary (docs/exit-codes.md).
int exit_code_for(ErrorKind kind);

// The one line every binary prints for an Error: "FILE:LINE:COL: error: KEY: MESSAGE (HINT)", or
// "TOOL: error: ..." when the error has no place (docs/exit-codes.md).
std::string error_line(const Error& e, const std::string& tool);

// Error(kIo) for `path`: "WHAT: strerror(err)" (err defaults to errno).
Error io_error(const std::string& path, const std::string& what, int err = -1);

}  // namespace sweepbench
