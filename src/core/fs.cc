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

namespace {

// An ostream's buffer over a descriptor it does not own; write errors set the stream's badbit
// with errno as write(2) left it.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof(buf_)); }
  ~FdBuf() override = default;

 protected:
  int_type overflow(int_type c) override {
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    std::string_view pending(pbase(), static_cast<size_t>(pptr() - pbase()));
    if (!pending.empty() && !write_all(fd_, pending)) return -1;
    setp(buf_, buf_ + sizeof(buf_));
    return 0;
  }

 private:
  int fd_;
  char buf_[1 << 16];
};

}  // namespace

AtomicFile::AtomicFile(std::string path, Kind kind) : path_(std::move(path)) {
  fs::path dir = fs::path(path_).parent_path();
  if (dir.empty()) dir = ".";
  if (kind == Kind::kUnnamed) {
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    // Not every file system has O_TMPFILE (NFS): then a named file, as for kNamed.
  }
  if (fd_ < 0) {
    tmp_ = temporary_beside(path_).string();
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error(path_, "cannot create a temporary file beside it", errno);
  }
  buf_ = std::make_unique<FdBuf>(fd_);
  out_ = std::make_unique<std::ostream>(buf_.get());
}

AtomicFile::~AtomicFile() {
  out_.reset();
  buf_.reset();
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::commit() {
  errno = 0;
  out_->flush();
  if (!out_->good()) throw io_error(path_, "cannot write", errno != 0 ? errno : EIO);
  if (::fsync(fd_) != 0) throw io_error(path_, "cannot write", errno);
  if (tmp_.empty()) {
    // Give the unnamed file a temporary name, then rename it over the target (linkat cannot
    // replace a file).
    std::string named = temporary_beside(path_).string();
    std::string self = "/proc/self/fd/" + std::to_string(fd_);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      throw io_error(path_, "cannot give the finished file a name", errno);
    }
    tmp_ = named;
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw io_error(path_, "cannot write", errno);
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    throw io_error(path_, "cannot rename the temporary file into place", errno);
  }
  committed_ = true;
}

void write_file_atomic(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  file.commit();
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
