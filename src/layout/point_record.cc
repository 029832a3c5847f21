#include "layout/point_record.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "config/yaml_io.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

struct StatusName {
  PointStatus status;
  const char* name;
};

constexpr StatusName kNames[] = {
    {PointStatus::kPending, "pending"},
    {PointStatus::kRunning, "running"},
    {PointStatus::kOk, "ok"},
    {PointStatus::kOom, "oom"},
    {PointStatus::kFailed, "failed"},
    {PointStatus::kTimeout, "timeout"},
    {PointStatus::kPreempted, "preempted"},
    {PointStatus::kCancelled, "cancelled"},
    {PointStatus::kNodeFail, "node_fail"},
    {PointStatus::kSkipped, "skipped"},
    {PointStatus::kIncomplete, "incomplete"},
};

}  // namespace

std::string to_string(PointStatus s) {
  for (const StatusName& n : kNames) {
    if (n.status == s) return n.name;
  }
  return "unknown";
}

std::optional<PointStatus> parse_point_status(const std::string& text) {
  for (const StatusName& n : kNames) {
    if (text == n.name) return n.status;
  }
  return std::nullopt;
}

const std::vector<PointStatus>& all_point_statuses() {
  static const std::vector<PointStatus> all = [] {
    std::vector<PointStatus> v;
    for (const StatusName& n : kNames) v.push_back(n.status);
    return v;
  }();
  return all;
}

bool is_failure(PointStatus s) {
  return s == PointStatus::kFailed || s == PointStatus::kOom || s == PointStatus::kTimeout;
}

bool is_interruption(PointStatus s) {
  return s == PointStatus::kCancelled || s == PointStatus::kPreempted ||
         s == PointStatus::kNodeFail;
}

Value PointRecord::to_value() const {
  Value v = Value::map();
  v.set("status", Value::string(to_string(status)));
  v.set("reason", Value::string(reason));
  v.set("config_hash", Value::string(config_hash));
  v.set("attempt", Value::integer(attempt));
  v.set("exit_code", Value::integer(exit_code));
  v.set("launcher", Value::string(launcher));
  Value cmd = Value::list();
  for (const std::string& a : command) cmd.items().push_back(Value::string(a));
  v.set("command", cmd);
  v.set("host", Value::string(host));
  v.set("pid", Value::integer(pid));
  v.set("slurm_job_id", Value::string(slurm_job_id));
  v.set("started", Value::string(started));
  v.set("ended", Value::string(ended));
  v.set("seconds", Value::real(seconds));
  if (!cpus.empty()) v.set("cpus", Value::string(cpus));
  if (!gpus.empty()) v.set("gpus", Value::string(gpus));
  if (!nodes.empty()) v.set("nodes", Value::string(nodes));
  if (beside) {
    Value list = Value::list();
    for (const std::string& tag : *beside) list.items().push_back(Value::string(tag));
    v.set("beside", list);
  }
  if (!partition.empty()) v.set("partition", Value::string(partition));
  if (!reference.empty()) {
    v.set("reference", Value::string(reference));
    v.set("references", references);
  }
  return v;
}

PointRecord PointRecord::from_value(const Value& v) {
  PointRecord r;
  r.status = parse_point_status(text_field(v, "status")).value_or(PointStatus::kPending);
  r.reason = text_field(v, "reason");
  r.config_hash = text_field(v, "config_hash");
  r.attempt = int_field(v, "attempt", 0);
  r.exit_code = int_field(v, "exit_code", -1);
  r.launcher = text_field(v, "launcher");
  if (const Value* cmd = v.find("command"); cmd != nullptr && cmd->is_list()) {
    for (const Value& a : cmd->items()) {
      if (a.is_string()) r.command.push_back(a.as_string());
    }
  }
  r.host = text_field(v, "host");
  r.pid = int_field(v, "pid", 0);
  r.slurm_job_id = text_field(v, "slurm_job_id");
  r.started = text_field(v, "started");
  r.ended = text_field(v, "ended");
  if (const Value* s = v.find("seconds"); s != nullptr && s->is_number()) r.seconds = s->as_float();
  r.cpus = text_field(v, "cpus");
  r.gpus = text_field(v, "gpus");
  r.nodes = text_field(v, "nodes");
  if (const Value* b = v.find("beside"); b != nullptr && b->is_list()) {
    r.beside.emplace();
    for (const Value& tag : b->items()) {
      if (tag.is_string()) r.beside->push_back(tag.as_string());
    }
  }
  r.partition = text_field(v, "partition");
  r.reference = text_field(v, "reference");
  if (const Value* refs = v.find("references"); refs != nullptr && refs->is_list()) {
    r.references = *refs;
  }
  return r;
}

std::string status_path(const std::string& point_dir) {
  return (fs::path(point_dir) / kStatusFile).string();
}

std::optional<PointRecord> read_point_record(const std::string& point_dir) {
  std::string path = status_path(point_dir);
  std::optional<std::string> text = read_file_if_exists(path, kMaxSmallFile, Links::kRefuse);
  if (!text) return std::nullopt;
  Value v;
  try {
    v = parse_own_yaml(*text, path);
  } catch (const Error& e) {
    throw Error(ErrorKind::kIo, Mark::in(path), "", "cannot be read: " + e.message(),
                "it is written atomically, so something else wrote it; move it away");
  }
  if (!v.is_map()) {
    throw Error(ErrorKind::kIo, Mark::in(path), "", "is not a point status", "move it away");
  }
  return PointRecord::from_value(v);
}

void write_point_record(const std::string& point_dir, const PointRecord& record) {
  write_file_atomic(status_path(point_dir), emit_json(record.to_value(), 2, false) + "\n");
}

int archive_previous_attempt(const std::string& point_dir) {
  std::vector<fs::path> to_move;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(point_dir, ec)) {
    std::string name = e.path().filename().string();
    if (name == kConfigFile || name == kClaimFile || name == kAttemptsDir) continue;
    to_move.push_back(e.path());
  }
  if (ec) throw Error(ErrorKind::kIo, Mark::in(point_dir), "", "cannot list: " + ec.message(), "");
  if (to_move.empty()) return 0;
  fs::path attempts = fs::path(point_dir) / kAttemptsDir;
  // attempts/ is read as untrusted (docs/security.md): a link there would carry the previous
  // attempt's rank files, summary and logs out of the results tree.
  struct stat st {};
  if (::lstat(attempts.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
      std::string what = S_ISLNK(st.st_mode)
                             ? tree_file_problem(attempts.string())
                             : "is not a directory: sweepbench keeps earlier attempts in one";
      throw Error(ErrorKind::kIo, Mark::in(attempts.string()), "",
                  what + "; the previous attempt was not moved, and the point did not run",
                  "move it away, then run again");
    }
  } else if (::mkdir(attempts.c_str(), 0755) != 0 && errno != EEXIST) {
    throw io_error(attempts.string(), "cannot create");
  }
  int n = 1;
  while (fs::exists(attempts / std::to_string(n), ec)) ++n;
  fs::path dest = attempts / std::to_string(n);
  if (::mkdir(dest.c_str(), 0755) != 0) throw io_error(dest.string(), "cannot create");
  for (const fs::path& p : to_move) {
    fs::path target = dest / p.filename();
    if (::rename(p.c_str(), target.c_str()) != 0) throw io_error(p.string(), "cannot move");
  }
  return n;
}

}  // namespace sweepbench
