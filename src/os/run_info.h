// Where and when a run happens: SLURM ids, the container it runs in, UTC timestamps.
#pragma once

#include <string>

namespace sweepbench {

struct RunEnvironment {
  std::string container_runtime;  // apptainer, singularity, enroot, charliecloud, podman, or ""
  std::string container_image;
  std::string container_digest;    // image id or digest where the runtime exposes it
  std::string container_env_kept;  // --env-keep's list: the variables passed into the container
  std::string slurm_job_id, slurm_array_job_id, slurm_array_task_id, slurm_step_id;
};

// Reads the environment. SWEEPBENCH_CONTAINER_RUNTIME / _IMAGE / _DIGEST, which sweepbench's
// launcher sets, win over what is detected: APPTAINER_CONTAINER and SINGULARITY_CONTAINER (the
// image path), CH_RUNNING (Charliecloud's ch-run), /run/.containerenv (Podman: image and id),
// and the container=enroot variable (enroot, also under pyxis).
RunEnvironment detect_environment();

// The rank a launcher gave this process, read before MPI starts (to print usage errors once), and
// for programs that never start MPI (bench-command): the world size and the rank on its node
// (1 and 0 without a launcher).
int launcher_rank();
int launcher_world_size();
int launcher_local_rank();
// What names this launch, the same in every rank it started: PMIx's namespace, Open MPI's job id,
// or SLURM's job and step; "" without a launcher.
std::string launch_id();
// 32 hex digits from /dev/urandom: a run's id, drawn once and shared by its ranks.
std::string random_run_id();

}  // namespace sweepbench
