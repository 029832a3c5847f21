#include "postprocess/history_mlflow.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "config/yaml_io.h"
#include "layout/point_record.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {

namespace {

// MLflow's names: letters, digits, _ - . space : / (mlflow/utils/validation.py; its \w also takes
// letters beyond ASCII, which are left out here rather than guessed at), not "/" first, no "..".
bool mlflow_key_ok(const std::string& key) {
  if (key.empty() || key.size() > kMlflowMaxKey || key.front() == '/' ||
      key.find("..") != std::string::npos) {
    return false;
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ' ' || c == ':' || c == '/';
  });
}

// Cut to `limit` bytes without splitting a UTF-8 character.
std::string cut_utf8(const std::string& s, size_t limit) {
  if (s.size() <= limit) return s;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

// Adds KEY=VALUE to `items` when MLflow takes the key; the value cut to `limit`.
void add_item(std::vector<MlflowItem>* items, const std::string& key, const std::string& value,
              size_t limit, const char* what, const HistoryRun& r,
              const std::function<void(const std::string&)>& warning) {
  const std::string where =
      " of run " + r.sweep + "/" + r.tag + " (attempt " + std::to_string(r.attempt) + ")";
  if (!mlflow_key_ok(key)) {
    if (warning) {
      warning(std::string(what) + " " + quote_json(key) + where +
              " left out: MLflow takes names of up to 250 letters, digits, _ - . space : /");
    }
    return;
  }
  if (value.size() > limit && warning) {
    warning(std::string(what) + " " + key + where + " cut to MLflow's " + std::to_string(limit) +
            " characters (it has " + std::to_string(value.size()) + ")");
  }
  items->push_back({key, cut_utf8(value, limit)});
}

std::string param_text(const Value& v) { return v.is_scalar() ? scalar_text(v) : emit_json(v, -1); }

Value items_json(const std::vector<MlflowItem>& items) {
  Value list = Value::list();
  for (const MlflowItem& i : items) {
    Value e = Value::map();
    e.set("key", Value::string(i.key));
    e.set("value", Value::string(i.value));
    list.items().push_back(std::move(e));
  }
  return list;
}

Value metrics_json(const std::vector<MlflowMetric>& metrics) {
  Value list = Value::list();
  for (const MlflowMetric& m : metrics) {
    Value e = Value::map();
    e.set("key", Value::string(m.key));
    e.set("value", Value::real(m.value));
    e.set("timestamp", Value::integer(m.timestamp));
    e.set("step", Value::integer(0));
    list.items().push_back(std::move(e));
  }
  return list;
}

// Past kYamlMaxDepth levels (a server's or a file's hostile nesting) `deep` is set and the rest is
// left out, so that neither this nor Value's destructor recurse without bound.
Value json_of(const nlohmann::json& j, int depth, bool* deep) {
  if (depth > kYamlMaxDepth) {
    *deep = true;
    return Value::null();
  }
  switch (j.type()) {
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      return u <= static_cast<std::uint64_t>(INT64_MAX)
                 ? Value::integer(static_cast<std::int64_t>(u))
                 : Value::real(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::real(j.get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      Value list = Value::list();
      for (const auto& item : j) list.items().push_back(json_of(item, depth + 1, deep));
      return list;
    }
    case nlohmann::json::value_t::object: {
      Value map = Value::map();
      for (const auto& [key, item] : j.items()) map.set(key, json_of(item, depth + 1, deep));
      return map;
    }
    default:
      return Value::null();
  }
}

// The offline file's fields of a run, read back; Error(kInput) at `mark` for one missing.
std::string need_text(const Value& v, const char* key, const Mark& mark) {
  const Value* f = v.find(key);
  if (f == nullptr || !f->is_string()) {
    throw Error::input(mark, key, "is missing or not text",
                       "the file is not one bench-history export mlflow --offline wrote");
  }
  return f->as_string();
}

std::vector<MlflowItem> need_items(const Value& v, const char* key, const Mark& mark) {
  const Value* f = v.find(key);
  std::vector<MlflowItem> items;
  if (f == nullptr || !f->is_list()) throw Error::input(mark, key, "is missing or not a list");
  for (const Value& e : f->items())
    items.push_back({need_text(e, "key", mark), need_text(e, "value", mark)});
  return items;
}

// MLflow's error as one line: "404 RESOURCE_DOES_NOT_EXIST: Could not find ...".
std::string refusal(const MlflowResponse& r) {
  std::string text = std::to_string(r.http_status);
  const std::string code = text_field(r.body, "error_code");
  const std::string message = text_field(r.body, "message");
  if (!code.empty()) text += " " + code;
  if (!message.empty()) {
    text += ": " + message;
  } else if (!r.body.is_map()) {
    text += ", an answer that is not MLflow's JSON (" + quote_json(r.text.substr(0, 200)) + ")";
  }
  return text;
}

// The body of an answer that must be a success; Error(kIo) naming the request and MLflow's
// error otherwise.
const Value& check_ok(MlflowApi& api, const std::string& endpoint, const MlflowResponse& r) {
  if (r.http_status == 200 && r.body.is_map()) return r.body;
  std::string hint = "see the server's log";
  if (r.http_status == 401 || r.http_status == 403) {
    hint =
        "set $MLFLOW_TRACKING_TOKEN, or $MLFLOW_TRACKING_USERNAME and "
        "$MLFLOW_TRACKING_PASSWORD, as MLflow's own client reads them";
  } else if (r.http_status == 404 && !r.body.is_map()) {
    hint = "is --tracking-uri an MLflow tracking server's address (http://HOST:PORT)?";
  }
  throw Error(ErrorKind::kIo, Mark::in(api.describe()), "",
              "MLflow refused " + endpoint + ": " + refusal(r), hint);
}

// The answer of a request that must succeed (check_ok).
Value expect_ok(MlflowApi& api, const std::string& method, const std::string& endpoint,
                const Value& body) {
  const MlflowResponse r = api.call(method, endpoint, body);
  return check_ok(api, endpoint, r);
}

struct Existing {
  std::string run_id, status;
  std::int64_t end_time = 0;
};

// Every active run of the experiment that sweepbench made: the points' by run key, the sweeps'
// parents by sweep. One search, page by page, rather than one a run.
void existing_runs(MlflowApi& api, const std::string& experiment_id,
                   std::map<std::string, Existing>* points,
                   std::map<std::string, Existing>* parents) {
  std::string token;
  do {
    Value body = Value::map();
    Value ids = Value::list();
    ids.items().push_back(Value::string(experiment_id));
    body.set("experiment_ids", ids);
    body.set("filter", Value::string("tags.`sweepbench.sweep` != ''"));
    body.set("run_view_type", Value::string("ACTIVE_ONLY"));
    body.set("max_results", Value::integer(1000));
    if (!token.empty()) body.set("page_token", Value::string(token));
    const Value answer = expect_ok(api, "POST", "runs/search", body);
    if (const Value* runs = answer.find("runs"); runs != nullptr && runs->is_list()) {
      for (const Value& run : runs->items()) {
        const Value* info = run.find("info");
        const Value* data = run.find("data");
        if (info == nullptr || data == nullptr) continue;
        std::string run_key, sweep;
        if (const Value* tags = data->find("tags"); tags != nullptr && tags->is_list()) {
          for (const Value& t : tags->items()) {
            if (text_field(t, "key") == "sweepbench.run_key") run_key = text_field(t, "value");
            if (text_field(t, "key") == "sweepbench.sweep") sweep = text_field(t, "value");
          }
        }
        Existing e{text_field(*info, "run_id"), text_field(*info, "status"),
                   int_field(*info, "end_time", 0)};
        if (!run_key.empty()) {
          (*points)[run_key] = e;
        } else if (!sweep.empty()) {
          (*parents)[sweep] = e;
        }
      }
    }
    token = text_field(answer, "next_page_token");
  } while (!token.empty());
}

// The experiment's id, the experiment made when it is not there.
std::string experiment_id_of(MlflowApi& api, const std::string& name) {
  Value query = Value::map();
  query.set("experiment_name", Value::string(name));
  MlflowResponse r = api.call("GET", "experiments/get-by-name", query);
  if (r.http_status == 404 && text_field(r.body, "error_code") == "RESOURCE_DOES_NOT_EXIST") {
    Value create = Value::map();
    create.set("name", Value::string(name));
    MlflowResponse made = api.call("POST", "experiments/create", create);
    if (made.http_status == 200) return text_field(made.body, "experiment_id");
    // Another export made it at the same moment: read it again.
    r = api.call("GET", "experiments/get-by-name", query);
  }
  if (r.http_status != 200) check_ok(api, "experiments/get-by-name", r);  // throws
  const Value* experiment = r.body.find("experiment");
  if (experiment == nullptr) {
    throw Error(ErrorKind::kIo, Mark::in(api.describe()), "",
                "MLflow's experiments/get-by-name answered without an experiment");
  }
  if (text_field(*experiment, "lifecycle_stage") == "deleted") {
    throw Error(ErrorKind::kConflict, Mark::in("--experiment " + name), "",
                "is a deleted experiment on " + api.describe(),
                "restore it (mlflow experiments restore --experiment-id " +
                    text_field(*experiment, "experiment_id") + ") or choose another --experiment");
  }
  return text_field(*experiment, "experiment_id");
}

// Creates a run with its first tags, logs the rest in batches, then marks it ended: only a
// run marked ended is whole.
std::string send_run(MlflowApi& api, const std::string& experiment_id, const MlflowRun& run,
                     const std::vector<MlflowItem>& create_tags) {
  const Value created =
      expect_ok(api, "POST", "runs/create",
                mlflow_create_request(experiment_id, run.run_name, run.start_time, create_tags));
  const Value* info = created.find("run") ? created.find("run")->find("info") : nullptr;
  const std::string run_id = info ? text_field(*info, "run_id") : "";
  if (run_id.empty()) {
    throw Error(ErrorKind::kIo, Mark::in(api.describe()), "",
                "MLflow's runs/create answered without a run_id");
  }
  for (const MlflowBatch& b : mlflow_batches(run)) {
    expect_ok(api, "POST", "runs/log-batch", mlflow_batch_request(run_id, b));
  }
  expect_ok(api, "POST", "runs/update", mlflow_update_request(run_id, run.status, run.end_time));
  return run_id;
}

}  // namespace

std::string mlflow_status(const std::string& status) {
  if (status == "ok") return "FINISHED";
  const std::optional<PointStatus> s = parse_point_status(status);
  if (s && (is_interruption(*s) || *s == PointStatus::kTimeout)) return "KILLED";
  return "FAILED";
}

std::int64_t mlflow_time_ms(const std::string& t) {
  // YYYY-MM-DDTHH:MM:SS[.fff...]Z
  auto digits = [&](size_t from, size_t n, int* out) {
    if (from + n > t.size()) return false;
    int v = 0;
    for (size_t i = from; i < from + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + (t[i] - '0');
    }
    *out = v;
    return true;
  };
  int y, mo, d, h, mi, s;
  if (t.size() < 20 || !digits(0, 4, &y) || t[4] != '-' || !digits(5, 2, &mo) || t[7] != '-' ||
      !digits(8, 2, &d) || t[10] != 'T' || !digits(11, 2, &h) || t[13] != ':' ||
      !digits(14, 2, &mi) || t[16] != ':' || !digits(17, 2, &s) || t.back() != 'Z') {
    return 0;
  }
  std::int64_t ms = 0;
  size_t i = 19;
  if (t[i] == '.') {
    int scale = 100;
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, scale /= 10) {
      ms += (t[i] - '0') * scale;
    }
  }
  if (i != t.size() - 1) return 0;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return 0;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  const std::time_t seconds = timegm(&tm);  // glibc's: UTC, no time zone looked up
  if (seconds <= 0) return 0;
  return static_cast<std::int64_t>(seconds) * 1000 + ms;
}

std::vector<MlflowRun> mlflow_runs(const std::vector<HistoryRun>& runs,
                                   const std::function<void(const std::string&)>& warning) {
  std::vector<MlflowRun> out;
  for (const HistoryRun& r : runs) {
    MlflowRun m;
    m.run_key = r.run_key;
    m.sweep = r.sweep;
    m.run_name = r.tag;
    m.start_time = mlflow_time_ms(r.started);
    m.end_time = mlflow_time_ms(r.ended);
    m.status = mlflow_status(r.status);
    if (!r.config_json.empty()) {
      const Value config = parse_own_yaml(r.config_json, "the store's config of " + r.run_key);
      if (config.is_map()) {
        for (const Value::Entry& e : config.entries()) {
          if (e.value.is_null()) continue;
          add_item(&m.params, e.key, param_text(e.value), kMlflowMaxParamValue, "config key", r,
                   warning);
        }
      }
    }
    const std::int64_t when = m.end_time ? m.end_time : m.start_time;
    for (const HistoryMetric& metric : r.metrics) {
      std::vector<MlflowItem> names;  // checked as params are
      add_item(&names, metric.name, "", 0, "metric", r, warning);
      if (names.empty()) continue;
      for (const auto& [suffix, value] : {std::pair<const char*, double>{"", metric.value},
                                          {"_ci_low", metric.ci_low},
                                          {"_ci_high", metric.ci_high}}) {
        const std::string key = metric.name + suffix;
        if (std::isfinite(value) && key.size() <= kMlflowMaxKey) {
          m.metrics.push_back({key, value, when});
        }
      }
      if (!metric.unit.empty()) {
        add_item(&m.tags, "sweepbench.unit." + metric.name, metric.unit, kMlflowMaxTagValue,
                 "unit of metric", r, warning);
      }
    }
    const std::vector<std::pair<std::string, std::string>> own = {
        {"sweepbench.run_key", r.run_key},
        {"sweepbench.sweep", r.sweep},
        {"sweepbench.tag", r.tag},
        {"sweepbench.attempt", std::to_string(r.attempt)},
        {"sweepbench.repeat", std::to_string(r.repeat)},
        {"sweepbench.status", r.status},
        {"sweepbench.reason", r.reason},
        {"sweepbench.config_hash", r.config_hash},
        {"sweepbench.series_key", r.series_key},
        {"sweepbench.environment_id", r.environment_id},
        {"sweepbench.benchmark", r.benchmark},
        {"sweepbench.scenario", r.scenario},
    };
    for (const auto& [key, value] : own) {
      if (!value.empty()) add_item(&m.tags, key, value, kMlflowMaxTagValue, "tag", r, warning);
    }
    for (const auto& [field, value] : r.environment) {
      add_item(&m.tags, "env." + field, value, kMlflowMaxTagValue, "environment field", r, warning);
    }
    for (const auto& [name, value] : r.labels) {
      add_item(&m.tags, "label." + name, value, kMlflowMaxTagValue, "label", r, warning);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<MlflowBatch> mlflow_batches(const MlflowRun& run) {
  std::vector<MlflowBatch> batches;
  size_t p = 0, t = 0, m = 0;
  while (batches.empty() || p < run.params.size() || t < run.tags.size() ||
         m < run.metrics.size()) {
    MlflowBatch b;
    const size_t np = std::min(kMlflowBatchParams, run.params.size() - p);
    const size_t nt = std::min(kMlflowBatchTags, run.tags.size() - t);
    const size_t nm =
        std::min({kMlflowBatchMetrics, kMlflowBatchItems - np - nt, run.metrics.size() - m});
    b.params.assign(run.params.begin() + p, run.params.begin() + p + np);
    b.tags.assign(run.tags.begin() + t, run.tags.begin() + t + nt);
    b.metrics.assign(run.metrics.begin() + m, run.metrics.begin() + m + nm);
    p += np, t += nt, m += nm;
    if (b.params.empty() && b.tags.empty() && b.metrics.empty()) break;  // nothing to log
    batches.push_back(std::move(b));
  }
  return batches;
}

Value mlflow_create_request(const std::string& experiment_id, const std::string& run_name,
                            std::int64_t start_time, const std::vector<MlflowItem>& tags) {
  Value body = Value::map();
  body.set("experiment_id", Value::string(experiment_id));
  body.set("run_name", Value::string(run_name));
  if (start_time > 0) body.set("start_time", Value::integer(start_time));
  body.set("tags", items_json(tags));
  return body;
}

Value mlflow_batch_request(const std::string& run_id, const MlflowBatch& batch) {
  Value body = Value::map();
  body.set("run_id", Value::string(run_id));
  body.set("params", items_json(batch.params));
  body.set("metrics", metrics_json(batch.metrics));
  body.set("tags", items_json(batch.tags));
  return body;
}

Value mlflow_update_request(const std::string& run_id, const std::string& status,
                            std::int64_t end_time) {
  Value body = Value::map();
  body.set("run_id", Value::string(run_id));
  body.set("status", Value::string(status));
  if (end_time > 0) body.set("end_time", Value::integer(end_time));
  return body;
}

std::string mlflow_offline_text(const MlflowOffline& offline) {
  Value header = Value::map();
  header.set("sweepbench_mlflow_export", Value::integer(1));
  header.set("experiment", Value::string(offline.experiment));
  header.set("runs", Value::integer(static_cast<std::int64_t>(offline.runs.size())));
  std::string text = emit_json(header, -1) + "\n";
  for (const MlflowRun& r : offline.runs) {
    Value line = Value::map();
    line.set("run_key", Value::string(r.run_key));
    line.set("sweep", Value::string(r.sweep));
    line.set("run_name", Value::string(r.run_name));
    line.set("start_time", Value::integer(r.start_time));
    line.set("end_time", Value::integer(r.end_time));
    line.set("status", Value::string(r.status));
    line.set("params", items_json(r.params));
    line.set("metrics", metrics_json(r.metrics));
    line.set("tags", items_json(r.tags));
    text += emit_json(line, -1) + "\n";
  }
  return text;
}

MlflowOffline parse_mlflow_offline(std::string_view text, const std::string& source) {
  MlflowOffline offline;
  std::int64_t expected = -1;
  int line_no = 0;
  size_t from = 0;
  while (from < text.size()) {
    size_t end = text.find('\n', from);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(from, end - from);
    from = end + 1;
    ++line_no;
    const Mark mark = Mark::in(source, line_no);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const Value v = parse_json_value(line, mark.str());
    if (!v.is_map()) throw Error::input(mark, "", "is not a JSON object");
    if (expected < 0) {
      if (int_field(v, "sweepbench_mlflow_export", 0) != 1) {
        throw Error::input(mark, "",
                           "is not the start of a file bench-history export mlflow "
                           "--offline wrote (version 1)",
                           "write it again with this bench-history");
      }
      offline.experiment = text_field(v, "experiment");
      expected = int_field(v, "runs", -1);
      if (expected < 0) throw Error::input(mark, "runs", "is missing");
      continue;
    }
    MlflowRun r;
    r.run_key = need_text(v, "run_key", mark);
    r.sweep = need_text(v, "sweep", mark);
    r.run_name = need_text(v, "run_name", mark);
    r.status = need_text(v, "status", mark);
    r.start_time = int_field(v, "start_time", 0);
    r.end_time = int_field(v, "end_time", 0);
    r.params = need_items(v, "params", mark);
    r.tags = need_items(v, "tags", mark);
    const Value* metrics = v.find("metrics");
    if (metrics == nullptr || !metrics->is_list()) {
      throw Error::input(mark, "metrics", "is missing or not a list");
    }
    for (const Value& e : metrics->items()) {
      const Value* value = e.find("value");
      if (value == nullptr || !value->is_number()) {
        throw Error::input(mark, "metrics", "holds a metric without a numeric value");
      }
      r.metrics.push_back(
          {need_text(e, "key", mark), value->as_float(), int_field(e, "timestamp", 0)});
    }
    if (r.run_key.empty() || r.sweep.empty()) {
      throw Error::input(mark, "run_key", "is empty", "the file was edited: write it again");
    }
    offline.runs.push_back(std::move(r));
  }
  if (expected < 0 || static_cast<size_t>(expected) != offline.runs.size()) {
    throw Error::input(Mark::in(source), "",
                       expected < 0 ? "is empty"
                                    : "holds " + std::to_string(offline.runs.size()) +
                                          " run(s) where its first line says " +
                                          std::to_string(expected) + ": it was cut short",
                       "copy it again whole, or write it again with --offline");
  }
  return offline;
}

Value parse_json_value(std::string_view text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) throw Error::input(Mark::in(source), "", "is not JSON");
  bool deep = false;
  Value v = json_of(j, 1, &deep);
  if (deep) {
    throw Error::input(Mark::in(source), "",
                       "nests deeper than " + std::to_string(kYamlMaxDepth) + " levels");
  }
  return v;
}

MlflowSendReport send_to_mlflow(MlflowApi& api, const std::string& experiment,
                                const std::vector<MlflowRun>& runs) {
  MlflowSendReport report;
  report.experiment_id = experiment_id_of(api, experiment);
  std::map<std::string, Existing> points, parents;
  existing_runs(api, report.experiment_id, &points, &parents);

  // Which runs go, and each sweep's span over them (for its parent).
  std::vector<const MlflowRun*> to_send;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> span;  // sweep -> start, end
  std::set<std::string> seen;
  for (const MlflowRun& r : runs) {
    if (!seen.insert(r.run_key).second) continue;
    auto it = points.find(r.run_key);
    if (it != points.end() && it->second.status != "RUNNING") {
      ++report.known;
      continue;
    }
    if (it != points.end()) {
      // Left RUNNING: an export was cut off before its last batch. Its batches may be some of
      // the run's; sent again whole under a new run, the half one deleted first.
      Value del = Value::map();
      del.set("run_id", Value::string(it->second.run_id));
      expect_ok(api, "POST", "runs/delete", del);
      ++report.redone;
    }
    to_send.push_back(&r);
    auto [s, made] = span.try_emplace(r.sweep, r.start_time, r.end_time);
    if (!made) {
      if (r.start_time && (!s->second.first || r.start_time < s->second.first)) {
        s->second.first = r.start_time;
      }
      s->second.second = std::max(s->second.second, r.end_time);
    }
  }

  std::map<std::string, std::string> parent_ids;
  for (const auto& [sweep, times] : span) {
    auto it = parents.find(sweep);
    std::string id;
    if (it != parents.end()) {
      id = it->second.run_id;
    } else {
      const Value created =
          expect_ok(api, "POST", "runs/create",
                    mlflow_create_request(report.experiment_id, sweep, times.first,
                                          {{"sweepbench.sweep", sweep}}));
      const Value* info = created.find("run") ? created.find("run")->find("info") : nullptr;
      id = info ? text_field(*info, "run_id") : "";
      if (id.empty()) {
        throw Error(ErrorKind::kIo, Mark::in(api.describe()), "",
                    "MLflow's runs/create answered without a run_id");
      }
      ++report.parents;
    }
    parent_ids[sweep] = id;
  }

  for (const MlflowRun* r : to_send) {
    send_run(api, report.experiment_id, *r,
             {{"mlflow.parentRunId", parent_ids.at(r->sweep)},
              {"sweepbench.run_key", r->run_key},
              {"sweepbench.sweep", r->sweep}});
    ++report.sent;
  }
  // A parent ends when its newest child does.
  for (const auto& [sweep, times] : span) {
    std::int64_t end = times.second;
    if (auto it = parents.find(sweep); it != parents.end())
      end = std::max(end, it->second.end_time);
    expect_ok(api, "POST", "runs/update",
              mlflow_update_request(parent_ids.at(sweep), "FINISHED", end));
  }
  return report;
}

}  // namespace sweepbench
