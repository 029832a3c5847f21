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

// Whether the last component of a path may be a symbolic link. A file of a results tree
// (status.json, summary.json, config.yaml, the claim, the manifest) is read with kRefuse: a link
// there leads out of the tree (to /etc/passwd, to another sweep's point), and sweepbench never
// writes one (docs/security.md).
enum class Links { kFollow, kRefuse };

// A file opened for reading only when it is a regular file (docs/security.md): opened with
// O_NONBLOCK, so that a FIFO cannot block the open, then checked with fstat, so that a FIFO,
// socket or device (/dev/zero) is refused before a byte is read. Returns the descriptor (the
// caller closes it), or -1 when the file does not exist. Throws Error(kIo) naming the path and
// what it is otherwise (with Links::kRefuse: also a symbolic link, dangling or not, and where it
// points).
int open_regular_file(const std::string& path, Links links = Links::kFollow);

// "is a symbolic link (to TARGET)", or without the target when it cannot be read: the start of
// every message that refuses a link (a tree file, a point directory).
std::string link_text(const std::string& path);

// Why the entry at `path` is not a regular file that open_regular_file(path, Links::kRefuse)
// would open: "is a FIFO, not a regular file: ...", "is a symbolic link (to X): ..."; "" when it
// is one or does not exist. Never opens it (a FIFO cannot block).
std::string tree_file_problem(const std::string& path);

// The whole file, or nullopt when it does not exist. Throws Error(kIo) naming the path when it
// exists but cannot be read, is not a regular file (open_regular_file), or is larger than
// `max_bytes`.
std::optional<std::string> read_file_if_exists(const std::string& path,
                                               size_t max_bytes = kMaxSmallFile,
                                               Links links = Links::kFollow);

// The last `max_bytes` of a regular file at most (a log's tail), or nullopt when it does not
// exist; the same errors as read_file_if_exists.
std::optional<std::string> read_file_tail(const std::string& path, size_t max_bytes);

// Why `path` cannot be an output that is written by renaming a finished file over it
// (write_file_atomic, AtomicFile): it exists, through links, and is not a regular file ("is a
// character device"): the rename would replace the device or FIFO itself, /dev/null for one.
// "" when it is a regular file or does not exist.
std::string output_target_problem(const std::string& path);

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

// The start of every binary's main: SIGPIPE is ignored, so that a reader that goes away (`|
// head -1`) makes writes to standard output fail with EPIPE instead of killing the tool: the
// runner goes on running and recording its points, bench-extract stops with exit 4 as
// documented, and close_standard_output says the output was cut short. Programs the tools start
// get SIGPIPE's default back (os/process.cc), as from a shell.
void survive_closed_output();

// The end of every binary's main: flushes std::cout and closes standard output, so that a write
// refused late (a full disk behind `> out.csv`, /dev/full, NFS reporting at close) is an error.
// Returns `code` when everything printed reached its file; otherwise prints
// "TOOL: error: standard output: cannot write: REASON; ..." to standard error and returns 4 (a
// file-system error, docs/exit-codes.md), whatever `code` was.
int close_standard_output(const char* tool, int code);

}  // namespace sweepbench
