#include "os/run_info.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>

namespace sweepbench {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// value of `key="..."` in Podman's /run/.containerenv
std::string containerenv_field(const std::string& text, const std::string& key) {
  size_t at = text.find(key + "=\"");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 2;
  size_t end = text.find('"', start);
  return end == std::string::npos ? "" : text.substr(start, end - start);
}

}  // namespace

RunEnvironment detect_environment() {
  RunEnvironment e;
  e.slurm_job_id = env("SLURM_JOB_ID");
  e.slurm_array_job_id = env("SLURM_ARRAY_JOB_ID");
  e.slurm_array_task_id = env("SLURM_ARRAY_TASK_ID");
  e.slurm_step_id = env("SLURM_STEP_ID");

  if (!env("APPTAINER_CONTAINER").empty()) {
    e.container_runtime = "apptainer";
    e.container_image = env("APPTAINER_CONTAINER");
  } else if (!env("SINGULARITY_CONTAINER").empty()) {
    e.container_runtime = "singularity";
    e.container_image = env("SINGULARITY_CONTAINER");
  } else if (!env("CH_RUNNING").empty()) {
    e.container_runtime = "charliecloud";
  } else if (env("container") == "enroot") {
    e.container_runtime = "enroot";
  } else {
    std::ifstream podman("/run/.containerenv");
    if (podman) {
      std::string text((std::istreambuf_iterator<char>(podman)), std::istreambuf_iterator<char>());
      e.container_runtime = "podman";
      e.container_image = containerenv_field(text, "image");
      e.container_digest = containerenv_field(text, "imageid");
    }
  }
  // What bench-sweep's container layer passed in fills what the runtime does not tell.
  if (e.container_runtime.empty()) e.container_runtime = env("SWEEPBENCH_CONTAINER_RUNTIME");
  if (e.container_image.empty()) e.container_image = env("SWEEPBENCH_CONTAINER_IMAGE");
  if (e.container_digest.empty()) e.container_digest = env("SWEEPBENCH_CONTAINER_DIGEST");
  e.container_env_kept = env("SWEEPBENCH_ENV_KEPT");
  return e;
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    std::string v = env(name);
    if (!v.empty()) return std::atoi(v.c_str());
  }
  return 0;
}

int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    std::string v = env(name);
    if (!v.empty() && std::atoi(v.c_str()) > 0) return std::atoi(v.c_str());
  }
  return 1;
}

int launcher_local_rank() {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    std::string v = env(name);
    if (!v.empty()) return std::atoi(v.c_str());
  }
  return 0;
}

std::string random_run_id() {
  std::random_device entropy;  // /dev/urandom
  char id[33] = {};
  for (int i = 0; i < 4; ++i) std::snprintf(id + 8 * i, 9, "%08x", entropy());
  return std::string(id, 32);
}

std::string launch_id() {
  if (std::string ns = env("PMIX_NAMESPACE"); !ns.empty()) return "pmix:" + ns;
  if (std::string job = env("OMPI_MCA_ess_base_jobid"); !job.empty()) return "ompi:" + job;
  if (std::string job = env("SLURM_JOB_ID"); !job.empty() && !env("SLURM_STEP_ID").empty()) {
    return "slurm:" + job + "." + env("SLURM_STEP_ID");
  }
  return "";
}

}  // namespace sweepbench
