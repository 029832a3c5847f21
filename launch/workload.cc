#include "launch/workload.h"

#include <unistd.h>

#include <filesystem>

#include "config/config.h"
#include "layout/paths.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {
namespace {

// bench-train (docs/train.md), bench-infer (docs/infer.md), bench-command (a user's program,
// docs/commands.md) and bench-serve (an inference server, docs/serving.md): one launch per point, every rank writing rank-NNNNN.h5; the same command
// line, exit codes and result files.
class RankFilesWorkload : public Workload {
 public:
  RankFilesWorkload(std::string name, std::string program, std::vector<std::string> keep = {})
      : name_(std::move(name)), program_(std::move(program)), keep_(std::move(keep)) {}
  std::vector<std::string> env_keep() const override { return keep_; }
  std::string name() const override { return name_; }
  std::string program() const override { return program_; }

  std::vector<std::string> argv(const WorkloadCall& c) const override {
    std::vector<std::string> out = {c.program};
    // Inside a container bench-train starts from a clean environment but for these.
    if (c.in_container) out.insert(out.end(), {"--env-keep", join(c.env_keep, ",")});
    out.insert(out.end(), {"--config", c.config_path, "--out", c.out_dir});
    return out;
  }

  PointStatus status_of_exit(int exit_code) const override {
    switch (exit_code) {
      case kExitOk:
        return PointStatus::kOk;
      case kExitTrainOom:
        return PointStatus::kOom;
      case kExitTrainTimeout:
        return PointStatus::kTimeout;
      case kExitTrainCancelled:
        return PointStatus::kCancelled;
      default:
        return PointStatus::kFailed;
    }
  }

  std::vector<std::string> result_files(const Settings& settings) const override {
    std::vector<std::string> files;
    for (std::int64_t r = 0; r < settings.launch.ranks; ++r) files.push_back(rank_file_name(r));
    return files;
  }

 private:
  std::string name_, program_;
  std::vector<std::string> keep_;
};

}  // namespace

const Registry<Workload>& workloads() {
  static const Registry<Workload> r(
      "benchmark", "benchmark",
      {
          {"train", [] { return std::make_unique<RankFilesWorkload>("train", "bench-train"); }},
          {"infer", [] { return std::make_unique<RankFilesWorkload>("infer", "bench-infer"); }},
          // A user's program looks itself and its interpreter up on PATH, as the runtime sets it.
          {"command",
           [] {
             return std::make_unique<RankFilesWorkload>("command", "bench-command",
                                                        std::vector<std::string>{"PATH"});
           }},
          // An inference server under load (docs/serving.md): the server looks itself up on
          // PATH, as a command does.
          {"serve",
           [] {
             return std::make_unique<RankFilesWorkload>("serve", "bench-serve",
                                                        std::vector<std::string>{"PATH"});
           }},
      });
  return r;
}

std::unique_ptr<Workload> workload_of(const Settings& settings) {
  return workloads().make(settings.benchmark);
}

std::string locate_program(const std::string& name,
                           const std::map<std::string, std::string>& given) {
  if (auto it = given.find(name); it != given.end()) return it->second;
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path sibling = self.parent_path() / name;
    if (::access(sibling.c_str(), X_OK) == 0) return sibling.string();
  }
  return name;
}

}  // namespace sweepbench
