#include "os/fs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "text/error.h"

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

namespace {

std::string what_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

std::string size_text(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes) + " bytes";
}

// Reads from `fd` at its offset until its end or `limit` + 1 bytes.
std::string read_up_to(int fd, const std::string& path, size_t limit) {
  std::string text;
  char buf[1 << 16];
  while (text.size() <= limit) {
    ssize_t n = ::read(fd, buf, std::min(sizeof(buf), limit + 1 - text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw io_error(path, "cannot read", errno);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string link_text(const std::string& path) {
  std::error_code ec;
  fs::path target = fs::read_symlink(path, ec);
  return "is a symbolic link" + (ec ? std::string() : " (to " + target.string() + ")");
}

namespace {

std::string link_problem(const std::string& path) {
  return link_text(path) + ": sweepbench never follows a link inside a results tree";
}

constexpr const char* kOnlyRegular = ", not a regular file: sweepbench reads only regular files";

}  // namespace

std::string tree_file_problem(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? "" : std::string("cannot be examined: ") + std::strerror(errno);
  }
  if (S_ISLNK(st.st_mode)) return link_problem(path);
  if (!S_ISREG(st.st_mode)) return "is " + what_kind(st.st_mode) + kOnlyRegular;
  return "";
}

int open_regular_file(const std::string& path, Links links) {
  int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  if (links == Links::kRefuse) flags |= O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    if (errno == ELOOP && links == Links::kRefuse) {
      throw Error(ErrorKind::kIo, Mark::in(path), "", link_problem(path),
                  "sweepbench wrote a regular file there: move the link away");
    }
    if (errno == ENXIO) {
      throw Error(ErrorKind::kIo, Mark::in(path), "",
                  "is a socket or device, not a regular file: sweepbench reads only regular files");
    }
    throw io_error(path, "cannot read", errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw io_error(path, "cannot read", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::kIo, Mark::in(path), "", "is " + what_kind(st.st_mode) + kOnlyRegular);
  }
  // Regular files ignore O_NONBLOCK, but clear it for whoever reads on.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::optional<std::string> read_file_if_exists(const std::string& path, size_t max_bytes,
                                               Links links) {
  Fd f{open_regular_file(path, links)};
  if (f.fd < 0) return std::nullopt;
  std::string text = read_up_to(f.fd, path, max_bytes);
  if (text.size() > max_bytes) {
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                "is larger than " + size_text(max_bytes) +
                    ", more than such a file can be: is it the file it should be?");
  }
  return text;
}

std::optional<std::string> read_file_tail(const std::string& path, size_t max_bytes) {
  Fd f{open_regular_file(path)};
  if (f.fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(f.fd, &st) == 0 && static_cast<size_t>(st.st_size) > max_bytes) {
    ::lseek(f.fd, st.st_size - static_cast<off_t>(max_bytes), SEEK_SET);
  }
  std::string text = read_up_to(f.fd, path, max_bytes);
  if (text.size() > max_bytes) text.erase(0, text.size() - max_bytes);  // it grew meanwhile
  return text;
}

std::string output_target_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return "is " + what_kind(st.st_mode) +
         ", not a regular file: the output is written whole and renamed over its name, which "
         "would replace it";
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

void survive_closed_output() { ::signal(SIGPIPE, SIG_IGN); }

int close_standard_output(const char* tool, int code) {
  errno = 0;
  std::cout.flush();
  bool ok = std::cout.good();
  int err = errno;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    ok = false;
    err = errno;
  }
  // stdio keeps only the error flag, not its errno: a pipe whose reader went away (`| head -1`)
  // says so itself, asked before it is closed.
  struct pollfd out {
    STDOUT_FILENO, POLLOUT, 0
  };
  const bool reader_gone = ::poll(&out, 1, 0) == 1 && (out.revents & POLLERR) != 0;
  // fclose reports what the last write left pending (NFS, some pipes). A standard output that was
  // closed before we started (EBADF, `>&-`) and never written to is not an error.
  if (std::fclose(stdout) != 0 && !(errno == EBADF && ok)) {
    ok = false;
    err = errno;
  }
  if (ok) return code;
  if (reader_gone && (err == 0 || err == EBADF)) err = EPIPE;
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
