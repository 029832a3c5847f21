#include "layout/manifest.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "config/yaml_io.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

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

Manifest Manifest::from_value(const Value& v) {
  Manifest m;
  if (!v.is_map()) return m;
  m.sweep = text_field(v, "sweep");
  m.sweep_file = text_field(v, "sweep_file");
  if (const Value* keys = v.find("varying_keys"); keys != nullptr && keys->is_list()) {
    for (const Value& k : keys->items()) {
      if (k.is_string()) m.varying_keys.push_back(k.as_string());
    }
  }
  const Value* points = v.find("points");
  if (points == nullptr || !points->is_list()) return m;
  for (const Value& e : points->items()) {
    if (!e.is_map()) continue;
    ManifestPoint p;
    p.tag = text_field(e, "tag");
    if (const Value* i = e.find("index"); i != nullptr && i->is_int()) p.index = i->as_int();
    if (const Value* r = e.find("repeat"); r != nullptr && r->is_int()) p.repeat = r->as_int();
    if (const Value* s = e.find("scenario"); s != nullptr && s->is_string()) {
      p.scenario = s->as_string();
    }
    p.config_hash = text_field(e, "config_hash");
    if (const Value* in = e.find("in_sweep"); in != nullptr && in->is_bool()) {
      p.in_sweep = in->as_bool();
    }
    p.slurm_job = text_field(e, "slurm_job");
    m.by_tag_.emplace(p.tag, m.points.size());  // the first entry of a tag wins
    m.points.push_back(std::move(p));
  }
  return m;
}

const ManifestPoint* Manifest::find(const std::string& tag) const {
  auto it = by_tag_.find(tag);
  return it == by_tag_.end() ? nullptr : &points[it->second];
}

void Manifest::refuse_unsafe_tags(const std::string& path) const {
  for (size_t i = 0; i < points.size(); ++i) {
    const ManifestPoint& p = points[i];
    const std::string problem = point_dir_name_problem(p.tag);
    if (problem.empty()) continue;
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                "points[" + std::to_string(i) + "].tag " + quote_json(p.tag) +
                    " cannot name a point directory inside this directory: " + problem,
                "sweepbench never writes such a tag: the manifest was edited or written by "
                "something else; restore it, or plan the sweep again into a new --out");
  }
}

std::optional<ManifestFile> read_manifest(const std::string& out_dir) {
  ManifestFile m;
  m.path = (fs::path(out_dir) / kManifestFile).string();
  std::optional<std::string> text = read_file_if_exists(m.path, kMaxSmallFile, Links::kRefuse);
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

void update_manifest_points(const std::string& out_dir,
                            const std::map<std::string, Value>& fields) {
  if (fields.empty()) return;
  update_manifest(out_dir, [&](Value& manifest) {
    Value* points = manifest.find("points");
    if (points == nullptr || !points->is_list()) return;
    for (Value& e : points->items()) {
      const Value* t = e.find("tag");
      if (t == nullptr || !t->is_string()) continue;
      auto it = fields.find(t->as_string());
      if (it == fields.end()) continue;
      for (const Value::Entry& f : it->second.entries()) e.set(f.key, f.value);
    }
  });
}

void add_manifest_job(const std::string& out_dir, const ManifestJob& job) {
  Value entry = Value::map();
  entry.set("job_id", Value::string(job.job_id));
  entry.set("script", Value::string(job.script));
  entry.set("submitted", Value::string(job.submitted));
  Value tags = Value::list();
  for (const std::string& tag : job.tags) tags.items().push_back(Value::string(tag));
  entry.set("points", tags);
  update_manifest(out_dir, [&](Value& manifest) {
    const Value* old_jobs = manifest.find("jobs");
    Value jobs = old_jobs != nullptr && old_jobs->is_list() ? *old_jobs : Value::list();
    jobs.items().push_back(entry);
    manifest.set("jobs", jobs);
    Value* points = manifest.find("points");
    if (points == nullptr || !points->is_list()) return;
    for (Value& e : points->items()) {
      const Value* t = e.find("tag");
      if (t == nullptr || !t->is_string()) continue;
      if (auto it = job.task_of.find(t->as_string()); it != job.task_of.end()) {
        e.set("slurm_job", Value::string(it->second));
      }
    }
  });
}

}  // namespace sweepbench
