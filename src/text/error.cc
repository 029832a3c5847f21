#include "text/error.h"

#include <cerrno>
#include <cstring>

#include "text/exit_codes.h"

namespace sweepbench {
namespace {

std::string format_error(const Mark& mark, const std::string& key, const std::string& message,
                         const std::string& hint) {
  std::string text;
  if (mark.known()) text += mark.str() + ": ";
  if (!key.empty()) text += key + ": ";
  text += message;
  if (!hint.empty()) text += " (" + hint + ")";
  return text;
}

}  // namespace

Mark Mark::in(const std::string& source, int line, int column) {
  return Mark{std::make_shared<const std::string>(source), line, column};
}

std::string Mark::str() const {
  if (!source) return {};
  std::string text = *source;
  if (line > 0) {
    text += ":" + std::to_string(line);
    if (column > 0) text += ":" + std::to_string(column);
  }
  return text;
}

Error::Error(ErrorKind kind, Mark mark, std::string key, std::string message, std::string hint)
    : std::runtime_error(format_error(mark, key, message, hint)),
      kind_(kind),
      mark_(std::move(mark)),
      key_(std::move(key)),
      message_(std::move(message)),
      hint_(std::move(hint)) {}

std::string Error::detail() const { return format_error(Mark{}, key_, message_, hint_); }

Error io_error(const std::string& path, const std::string& what, int err) {
  return Error(ErrorKind::kIo, Mark::in(path), "",
               what + ": " + std::strerror(err < 0 ? errno : err));
}

std::string error_line(const Error& e, const std::string& tool) {
  return (e.mark().known() ? e.mark().str() : tool) + ": error: " + e.detail();
}

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInput:
      return kExitUsage;
    case ErrorKind::kConflict:
      return kExitConflict;
    case ErrorKind::kIo:
      return kExitIo;
  }
  return kExitInternal;
}

}  // namespace sweepbench
