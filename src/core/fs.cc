#include "core/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

Error io_error(const std::string& path, const std::string& what, int err) {
  return Error(ErrorKind::kIo, Mark::in(path), "", what + ": " + std::strerror(err));
}

std::atomic<unsigned> g_tmp_counter{0};

// A name beside `path` that no other writer uses: ".NAME.tmp.PID.N".
fs::path temporary_beside(const std::string& path) {
  fs::path target(path);
  return target.parent_path() /
         ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
          std::to_string(g_tmp_counter++));
}

}  // namespace

bool write_all(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void write_file_atomic(const std::string& path, std::string_view text) {
  fs::path target(path);
  fs::path tmp = temporary_beside(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error(path, "cannot create a temporary file beside it", errno);
  if (!write_all(fd, text)) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw io_error(path, "cannot write", err);
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

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(temporary_beside(path_)) {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw io_error(path_, "cannot create a temporary file beside it", errno);
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  out_.close();
  ::unlink(tmp_.c_str());
}

void AtomicFile::commit() {
  out_.flush();
  bool written = static_cast<bool>(out_);
  out_.close();
  int fd = written ? ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0 || ::fsync(fd) != 0) {
    int err = written ? errno : EIO;
    if (fd >= 0) ::close(fd);
    throw io_error(path_, "cannot write", err);
  }
  ::close(fd);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    throw io_error(path_, "cannot rename the temporary file into place", errno);
  }
  committed_ = true;
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

void check_writable_directory(const std::string& dir) {
  fs::path probe = temporary_beside((fs::path(dir) / "write-test").string());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error(dir, "cannot write into this directory", errno);
  bool ok = write_all(fd, "x") && ::fsync(fd) == 0;
  int err = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok && err == 0) err = errno;
  ::unlink(probe.c_str());
  if (!ok) throw io_error(dir, "cannot write into this directory", err != 0 ? err : EIO);
}

void check_stream(const std::ostream& out, const std::string& name) {
  if (out.good()) return;
  int err = errno != 0 ? errno : EIO;
  throw io_error(name, "cannot write", err);
}

int close_standard_output(const char* tool, int code) {
  errno = 0;
  std::cout.flush();
  bool ok = std::cout.good();
  int err = errno;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    ok = false;
    err = errno;
  }
  // fclose reports what the last write left pending (NFS, some pipes). A standard output that was
  // closed before we started (EBADF, `>&-`) and never written to is not an error.
  if (std::fclose(stdout) != 0 && !(errno == EBADF && ok)) {
    ok = false;
    err = errno;
  }
  if (ok) return code;
  // A run that already failed on a write has said so; one message is enough.
  if (code == exit_code_for(ErrorKind::kIo)) return code;
  // The write that failed may lie far back (stdio keeps only the error flag, not its errno).
  std::fprintf(stderr,
               "%s: error: standard output: cannot write: %s; what was printed is cut "
               "short\n",
               tool, err != 0 ? std::strerror(err) : "a write failed");
  return exit_code_for(ErrorKind::kIo);
}

}  // namespace sweepbench
