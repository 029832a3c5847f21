// One point's row (bench-extract's own, not part of its interface): what a point directory's
// files say, decided with layout/point_status.h and computed with metrics/summary.h. The reader
// processes (reader_pool.cc) call extract_point and the walk (discover.cc) reads the manifests;
// the lists of columns are point_columns.h's, the long tables of --series point_series.h's and
// what these share with the row point_cells.h's.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "config/value.h"
#include "layout/manifest.h"
#include "postprocess/extract_table.h"

namespace sweepbench {

// The columns a row's `noisy` reads, and the flag itself: true or false where the row has one of
// them, absent otherwise.
const std::vector<std::string>& noise_columns();
void mark_noise(std::map<std::string, Value>* row, double threshold);

// A training point measured until precise (metrics.target_ci, docs/metrics.md): `target_met`,
// whether its mean step time's 95% interval ended within the target (half its width over its
// middle); false where there is no interval. Nothing for a point without a target.
void mark_target(std::map<std::string, Value>* row);

// The keys the sweeps of these points vary, in their sweep files' order (their manifests'
// varying_keys), for tables that show the axes first.
std::vector<std::string> sweep_axes(const std::vector<std::string>& point_dirs);

// A file whose presence makes its directory a point.
bool is_point_file(const std::string& name);

// What the manifest beside a point says about it (index, scenario, repeat, sweep); each manifest
// read once.
class Manifests {
 public:
  explicit Manifests(std::vector<std::string>* warnings) : warnings_(warnings) {}
  // The manifest entry of the point `point_dir` (nullptr when none names it); *sweep its sweep.
  const ManifestPoint* entry(const std::filesystem::path& point_dir, std::string* sweep);
  // The manifest of the sweep directory `dir` (empty when it has none).
  const Manifest& of_directory(const std::filesystem::path& dir);

 private:
  std::vector<std::string>* warnings_;
  std::map<std::string, Manifest> cache_;  // by directory
};

// A training point's row also holds its step times' batch means (metrics/statistics.h) under
// this name, for bench-compare's one-run comparisons: a list no table prints (it is in no column).
inline constexpr const char* kStepBatchMeans = "step_time_batch_means_s";

// A point's config (its config.yaml) as the row's cells: every key of the schema the point's
// benchmark reads, dotted ("train.micro_batch"), a free-form map's entries one cell each
// ("params.i").
void config_cells(const Value& config, std::map<std::string, Value>* row);

// One point's row, and what went wrong reading it. `unread`: why the rank files were not read
// (their reader crashed or hung on them); the row is then built from what else the directory
// says, and is incomplete.
ExtractedPoint extract_point(const std::string& dir, Manifests& manifests, double price_per_hour,
                             const std::string& unread = {}, Series series = Series::kNone);

}  // namespace sweepbench
