// File-system helpers that keep the promise "nothing half-written": every file is written under a
// temporary name in its own directory, flushed, and renamed over the final name when complete.
#pragma once

#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sweepbench {

// Writes all of `data` to `fd`, again after EINTR and short writes; false (errno set) on failure.
bool write_all(int fd, std::string_view data);

// Writes `text` to `path` atomically (an AtomicFile written at once). Throws Error(kIo) naming the
// path on failure, and leaves no temporary file behind, not even when killed (O_TMPFILE).
void write_file_atomic(const std::string& path, std::string_view text);

// For output written a piece at a time: stream() writes to a temporary file beside `path`, and
// commit() flushes it and renames it over `path`. Without commit() (an error on the way) the
// temporary file is removed and `path` is untouched.
//
// kUnnamed (for stream()): the temporary file has no name until commit() (O_TMPFILE where the
// file system has it), so even a process killed with SIGKILL leaves nothing behind. kNamed: it
// has a name from the start, temporary_path(), for a child process to write (gnuplot's figure).
class AtomicFile {
 public:
  enum class Kind { kUnnamed, kNamed };
  explicit AtomicFile(std::string path, Kind kind = Kind::kUnnamed);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  std::ostream& stream() { return *out_; }
  // kNamed only: the temporary file, for a child process to write instead of stream().
  const std::string& temporary_path() const { return tmp_; }
  void commit();  // throws Error(kIo) naming the path

 private:
  std::string path_, tmp_;  // tmp_ is empty while an unnamed file has no name
  int fd_ = -1;
  std::unique_ptr<std::streambuf> buf_;
  std::unique_ptr<std::ostream> out_;
  bool committed_ = false;
};

// The most read_file_if_exists reads of one file unless told otherwise: results' small files
// (status.json, summary.json, config.yaml, the manifest) are kilobytes; 64 MiB is no real one.
constexpr size_t kMaxSmallFile = size_t{64} << 20;

// A file opened for reading only when it is a regular file (docs/security.md): opened with
// O_NONBLOCK, so that a FIFO cannot block the open, then checked with fstat, so that a FIFO,
// socket or device (/dev/zero) is refused before a byte is read. Returns the descriptor (the
// caller closes it), or -1 when the file does not exist. Throws Error(kIo) naming the path and
// what it is otherwise.
int open_regular_file(const std::string& path);

// The whole file, or nullopt when it does not exist. Throws Error(kIo) naming the path when it
// exists but cannot be read, is not a regular file (open_regular_file), or is larger than
// `max_bytes`.
std::optional<std::string> read_file_if_exists(const std::string& path,
                                               size_t max_bytes = kMaxSmallFile);

// The last `max_bytes` of a regular file at most (a log's tail), or nullopt when it does not
// exist; the same errors as read_file_if_exists.
std::optional<std::string> read_file_tail(const std::string& path, size_t max_bytes);

// mkdir -p; throws Error(kIo) naming the path.
void make_directories(const std::string& path);

// Creates, writes a byte to, flushes and removes a file in `dir`, so a run finds out before any
// work that it could not keep its results (read-only, no permission, a full disk). Throws
// Error(kIo) naming the directory.
void check_writable_directory(const std::string& dir);

// Throws Error(kIo) naming `name` ("standard output", a file) when `out` has failed a write: a
// writer that streams (bench-extract's rows) checks after each piece and stops at the first
// refusal instead of reading on into a full disk.
void check_stream(const std::ostream& out, const std::string& name);

// The end of every binary's main: flushes std::cout and closes standard output, so that a write
// refused late (a full disk behind `> out.csv`, /dev/full, NFS reporting at close) is an error.
// Returns `code` when everything printed reached its file; otherwise prints
// "TOOL: error: standard output: cannot write: REASON; ..." to standard error and returns 4 (a
// file-system error, docs/exit-codes.md), whatever `code` was.
int close_standard_output(const char* tool, int code);

}  // namespace sweepbench
