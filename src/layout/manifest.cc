#include "layout/manifest.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "layout/paths.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

Error io_error(const std::string& path, const std::string& what) {
  return Error(ErrorKind::kIo, Mark::in(path), "", what + ": " + std::strerror(errno), "");
}

}  // namespace

DirLock::DirLock(const std::string& dir) {
  std::string path = (fs::path(dir) / kLockFile).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error(path, "cannot open the lock file");
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) throw io_error(path, "cannot lock");
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

std::optional<ManifestFile> read_manifest(const std::string& out_dir) {
  ManifestFile m;
  m.path = (fs::path(out_dir) / kManifestFile).string();
  std::optional<std::string> text = read_file_if_exists(m.path);
  if (!text) return std::nullopt;
  m.text = std::move(*text);
  m.value = parse_own_yaml(m.text, m.path);
  return m;
}

void update_manifest(const std::string& out_dir, const std::function<void(Value&)>& change) {
  DirLock lock(out_dir);
  std::optional<ManifestFile> m = read_manifest(out_dir);
  if (!m) return;
  change(m->value);
  std::string updated = emit_json(m->value, 2, false) + "\n";
  if (updated != m->text) write_file_atomic(m->path, updated);
}

void update_manifest_point(const std::string& out_dir, const std::string& tag,
                           const Value& fields) {
  update_manifest(out_dir, [&](Value& manifest) {
    Value* points = manifest.find("points");
    if (points == nullptr || !points->is_list()) return;
    for (Value& e : points->items()) {
      const Value* t = e.find("tag");
      if (t == nullptr || !t->is_string() || t->as_string() != tag) continue;
      for (const Value::Entry& f : fields.entries()) e.set(f.key, f.value);
    }
  });
}

}  // namespace sweepbench
