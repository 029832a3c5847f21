#include "core/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

Error io_error(const std::string& path, const std::string& what, int err) {
  return Error(ErrorKind::kIo, Mark::in(path), "", what + ": " + std::strerror(err));
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view text) {
  static std::atomic<unsigned> counter{0};
  fs::path target(path);
  fs::path tmp =
      target.parent_path() / ("." + target.filename().string() + ".tmp." +
                              std::to_string(::getpid()) + "." + std::to_string(counter++));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error(path, "cannot create a temporary file beside it", errno);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw io_error(path, "cannot write", err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw io_error(path, "cannot flush", err);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw io_error(path, "cannot rename the temporary file into place", err);
  }
}

std::optional<std::string> read_file_if_exists(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error(path, "cannot read", errno);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void make_directories(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec)
    throw Error(ErrorKind::kIo, Mark::in(path), "", "cannot create the directory: " + ec.message());
}

}  // namespace sweepbench
