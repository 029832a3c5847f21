// One point's row (bench-extract's own, not part of its interface): what a point directory's
// files say, decided with layout/point_status.h and computed with metrics/summary.h. The reader
// processes (reader_pool.cc) call extract_point; the walk (discover.cc) and the table operations
// share the manifests and the column lists (point_columns.cc); the long tables of --series are
// point_series.cc's.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"
#include "layout/manifest.h"
#include "metrics/rank_result.h"
#include "postprocess/extract.h"

namespace sweepbench {

// sweep, tag, index, scenario, repeat, status, reason.
const std::vector<std::string>& identity_columns();
// The metric columns in the order summarize() gives them, whether or not a point has them.
const std::vector<std::string>& metric_columns();
// Those of training (summarize()) and of inference (summarize_infer()) alone.
const std::vector<std::string>& training_metric_columns();
const std::vector<std::string>& inference_metric_columns();
// The memory columns of docs/extract.md.
const std::vector<std::string>& memory_column_names();
// The predictions beside the measurements and their errors (docs/extract.md).
const std::vector<std::string>& prediction_column_names();

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

// The columns of a metric's performance reference (sweep/references.h): the reference, the
// allowed range's ends (empty where unbounded) and whether the point passed:
// <metric>_ref, _ref_low, _ref_high, _ref_pass. The row's `reference` is pass or miss.
std::vector<std::string> reference_columns(const std::string& metric);

// A point's config (its config.yaml) as the row's cells: every key of the schema the point's
// benchmark reads, dotted ("train.micro_batch"), a free-form map's entries one cell each
// ("params.i").
void config_cells(const Value& config, std::map<std::string, Value>* row);

// One point's row, and what went wrong reading it. `unread`: why the rank files were not read
// (their reader crashed or hung on them); the row is then built from what else the directory
// says, and is incomplete.
ExtractedPoint extract_point(const std::string& dir, Manifests& manifests, double price_per_hour,
                             const std::string& unread = {}, Series series = Series::kNone);

// What the point's row, its columns (point_columns.cc) and its series (point_series.cc) share.
// A file of the results tree as a Value (JSON is YAML), nullopt when it is absent; one that cannot
// be read adds "PATH: cannot be read: ..." to `warnings`.
std::optional<Value> read_json_or_yaml(const std::filesystem::path& path,
                                       std::vector<std::string>* warnings);
// A number as a cell: null when not finite, an integer when whole.
Value number_or_null(double v);
// The rows of a point's long table (--series), each starting as the point's row (identity and
// config).
std::vector<std::map<std::string, Value>> series_rows(Series series,
                                                      const std::vector<RankResult>& ranks,
                                                      const std::map<std::string, Value>& point);

}  // namespace sweepbench
