// A sweep's manifest, DIR/manifest.json: the plan's points and what the runner and submit record
// in it (docs/results-format.md). Every read-modify-write holds DIR/.lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

// An advisory lock (flock) on DIR/.lock for read-modify-write of the manifest.
class DirLock {
 public:
  explicit DirLock(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// DIR/manifest.json as it is on disk.
struct ManifestFile {
  std::string path;
  std::string text;
  Value value;
};
// Reads DIR/manifest.json (nullopt when there is none) with parse_own_yaml: the writer's own
// subset is read directly, fast and whatever the number of points (parse_yaml's limit of a
// million values guards hand-written files, and a 100,000-point manifest holds more); anything
// else goes through parse_yaml. An unparsable file is an Error naming it.
std::optional<ManifestFile> read_manifest(const std::string& out_dir);

// One point of a manifest, as the plan writer, submit and the runner leave it
// (docs/results-format.md). What is absent from the file is absent here.
struct ManifestPoint {
  std::string tag;
  std::optional<std::int64_t> index, repeat;
  std::optional<std::string> scenario;
  std::string config_hash;  // "" when absent
  bool in_sweep = true;     // false: planned earlier, no longer in the sweep
  std::string slurm_job;    // the array task submit queued it as ("123_4"), "" if never
};

// The manifest, typed for readers (bench-sweep status, submit, bench-extract). Writers edit the
// Value (update_manifest), which keeps the fields other tools added.
struct Manifest {
  std::string sweep, sweep_file;
  std::vector<std::string> varying_keys;
  std::vector<ManifestPoint> points;

  static Manifest from_value(const Value& manifest);
  // The point with this tag; nullptr when none.
  const ManifestPoint* find(const std::string& tag) const;
  // Throws Error(kIo) naming `path` (the manifest) and the first entry whose tag cannot name a
  // point directory inside DIR (layout/paths.h's point_dir_name_problem: "../victim", an
  // absolute path, "."): a tool that reads DIR/<tag> for each entry calls it first, so that an
  // edited manifest never leads it out of DIR.
  void refuse_unsafe_tags(const std::string& path) const;

 private:
  std::map<std::string, size_t> by_tag_;
};

// Reads DIR/manifest.json, lets `change` edit it and writes it back (atomically, only when it
// changed), all under DirLock. Does nothing when there is no manifest.
void update_manifest(const std::string& out_dir, const std::function<void(Value&)>& change);

// A job bench-sweep submit queued: recorded at the end of the manifest's "jobs" list (its id,
// script, time and points), and on each of its points as "slurm_job" (the array task, "123_4").
struct ManifestJob {
  std::string job_id, script, submitted;
  std::vector<std::string> tags;
  std::map<std::string, std::string> task_of;  // tag -> the array task it runs in
};
void add_manifest_job(const std::string& out_dir, const ManifestJob& job);

// Sets each point's `fields` (a map, by tag) on its manifest entry: one rewrite, under DirLock.
void update_manifest_points(const std::string& out_dir, const std::map<std::string, Value>& fields);

}  // namespace sweepbench
