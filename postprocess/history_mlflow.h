// bench-history export mlflow (docs/history.md, "Exporting to MLflow"): the store's runs as
// MLflow runs, sent through MLflow's REST API (/api/2.0/mlflow/...) or written to an offline file
// that is sent later from a node that reaches the server.
//
// What maps to what: each stored run (one attempt of one point) is one MLflow run named by its
// tag, a child (tag mlflow.parentRunId) of one parent run per sweep named by the sweep. Params
// are the config's keys (bench-extract's config cells), metrics every stored metric with its
// interval as METRIC_ci_low and METRIC_ci_high, tags the environment (env.FIELD), the labels
// (label.NAME), the status and reason and the store's keys (sweepbench.*). The run's start and
// end are the attempt's; its status FINISHED for ok, KILLED for a run stopped from outside or by
// its time limit, FAILED otherwise.
//
// Each run is sent once: every run carries its run key (tag sweepbench.run_key, set when it is
// created) and one search of the experiment says which are there; a run is marked finished
// (runs/update) only after all of its batches are logged, so a run an export left RUNNING (cut
// off half-way) is deleted and sent again whole by the next export.
//
// Leaves out: HTTP itself (history_mlflow_http.h, behind MlflowApi), artifacts, datasets, models.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/value.h"
#include "postprocess/history_store.h"

namespace sweepbench {

// MLflow's limits (mlflow/utils/validation.py): a key's length, a param's and a tag's value, and
// what one runs/log-batch may hold.
inline constexpr size_t kMlflowMaxKey = 250;
inline constexpr size_t kMlflowMaxParamValue = 6000;
inline constexpr size_t kMlflowMaxTagValue = 8000;
inline constexpr size_t kMlflowBatchParams = 100;
inline constexpr size_t kMlflowBatchMetrics = 1000;
inline constexpr size_t kMlflowBatchTags = 100;
// log-batch's limit on all three together (params + metrics + tags).
inline constexpr size_t kMlflowBatchItems = 1000;

struct MlflowItem {  // a param or a tag
  std::string key, value;
};

struct MlflowMetric {
  std::string key;
  double value = 0;
  std::int64_t timestamp = 0;  // ms since the epoch
};

// One stored run as an MLflow run (the parents are made from these at sending time).
struct MlflowRun {
  std::string run_key;                        // tag sweepbench.run_key
  std::string sweep;                          // the parent it goes under (tag sweepbench.sweep)
  std::string run_name;                       // the point's tag
  std::int64_t start_time = 0, end_time = 0;  // ms since the epoch; 0: not known
  std::string status;                         // FINISHED, FAILED or KILLED
  std::vector<MlflowItem> params, tags;
  std::vector<MlflowMetric> metrics;
};

// The stored runs as MLflow runs. A key MLflow would refuse (past 250 characters, or a character
// other than letters, digits, _ - . space : /) is left out, a value past MLflow's limit cut to
// it, each with a warning; non-finite values are left out.
std::vector<MlflowRun> mlflow_runs(const std::vector<HistoryRun>& runs,
                                   const std::function<void(const std::string&)>& warning = {});

// "ok" -> FINISHED; cancelled, preempted, node_fail, timeout -> KILLED; the rest FAILED.
std::string mlflow_status(const std::string& status);

// "2026-11-20T08:00:00Z" (fractions of a second too) -> ms since the epoch; 0 when not such a
// time.
std::int64_t mlflow_time_ms(const std::string& iso8601_utc);

// What one runs/log-batch request sends: within every limit above.
struct MlflowBatch {
  std::vector<MlflowItem> params, tags;
  std::vector<MlflowMetric> metrics;
};
std::vector<MlflowBatch> mlflow_batches(const MlflowRun& run);

// Request bodies, every value through the one JSON emitter (emit_json) when sent.
Value mlflow_create_request(const std::string& experiment_id, const std::string& run_name,
                            std::int64_t start_time, const std::vector<MlflowItem>& tags);
Value mlflow_batch_request(const std::string& run_id, const MlflowBatch& batch);
Value mlflow_update_request(const std::string& run_id, const std::string& status,
                            std::int64_t end_time);

// The offline file: JSON lines, a header line {"sweepbench_mlflow_export": 1, "experiment":
// NAME, "runs": N} and then one line per run (its fields as above), written whole or not at all
// by the caller. read_mlflow_offline checks it whole (Error(kInput) naming FILE:LINE otherwise:
// another file, cut short, a field missing).
struct MlflowOffline {
  std::string experiment;
  std::vector<MlflowRun> runs;
};
std::string mlflow_offline_text(const MlflowOffline& offline);
MlflowOffline parse_mlflow_offline(std::string_view text, const std::string& source);

// JSON text into a Value (MLflow's answers, the offline file); Error(kInput) naming `source` when
// it is not one JSON document.
Value parse_json_value(std::string_view text, const std::string& source);

// An answer from MLflow: the HTTP status and its JSON body (null when it had none or was not
// JSON; `text` then holds the start of what came).
struct MlflowResponse {
  long http_status = 0;
  Value body;
  std::string text;
};

// The REST API, as sweepbench uses it: history_mlflow_http.h sends over HTTP.
class MlflowApi {
 public:
  virtual ~MlflowApi() = default;
  // `method` GET or POST, `endpoint` below /api/2.0/mlflow/ ("runs/create"); a GET sends the
  // body's fields as its query. Error(kIo) when no answer came (unreachable, timed out).
  virtual MlflowResponse call(const std::string& method, const std::string& endpoint,
                              const Value& body) = 0;
  // The server as messages name it (its password as ***).
  virtual std::string describe() const = 0;
};

struct MlflowSendReport {
  std::string experiment_id;
  size_t sent = 0;     // new runs, created and completed
  size_t known = 0;    // already there, finished
  size_t redone = 0;   // left RUNNING by an export cut off: deleted and sent again (in `sent`)
  size_t parents = 0;  // parent runs created
};

// Sends `runs` to `experiment` (made when it is not there), each once (see above). Error(kIo)
// naming the request and MLflow's error_code and message when MLflow refuses one.
MlflowSendReport send_to_mlflow(MlflowApi& api, const std::string& experiment,
                                const std::vector<MlflowRun>& runs);

}  // namespace sweepbench
