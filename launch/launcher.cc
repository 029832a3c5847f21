#include "launch/launcher.h"

#include <unistd.h>

#include <cstdlib>
#include <functional>

#include "config/config.h"
#include "config/placeholders.h"
#include "config/settings.h"
#include "launch/shell.h"
#include "launch/workload.h"
#include "os/hardware.h"
#include "text/error.h"
#include "text/registry.h"
#include "text/text.h"

namespace sweepbench {
namespace {

bool mentions(const std::vector<std::string>& args, const std::string& option) {
  for (const std::string& a : args) {
    if (a == option || a.rfind(option + "=", 0) == 0) return true;
  }
  return false;
}

// A short option given alone or with its value attached: -K, -K0.
bool mentions_short(const std::vector<std::string>& args, char option) {
  for (const std::string& a : args) {
    if (a.size() >= 2 && a[0] == '-' && a[1] == option) return true;
  }
  return false;
}

// One process, started directly.
class LocalLauncher : public Launcher {
 public:
  std::string name() const override { return "local"; }
  std::vector<std::string> prefix(const PointResources&, const LaunchSite&) const override {
    return {};
  }
};

// Open MPI's (or MPICH's) mpirun on this machine or the hosts its arguments name.
class MpirunLauncher : public Launcher {
 public:
  std::string name() const override { return "mpirun"; }
  std::vector<std::string> prefix(const PointResources& r, const LaunchSite& site) const override {
    std::vector<std::string> argv = {"mpirun", "-n", std::to_string(r.ranks)};
    // Open MPI binds each rank to one core when there are two ranks or fewer, which would leave
    // bench-train one thread; bench-train sizes its threads itself (docs/train.md).
    if (!mentions(r.mpirun_args, "--bind-to") && !mentions(r.mpirun_args, "--map-by")) {
      argv.insert(argv.end(), {"--bind-to", "none"});
    }
    if (site.as_root && !mentions(r.mpirun_args, "--allow-run-as-root")) {
      argv.push_back("--allow-run-as-root");
    }
    for (const auto& [name, value] : r.env) argv.insert(argv.end(), {"-x", name});
    argv.insert(argv.end(), r.mpirun_args.begin(), r.mpirun_args.end());
    return argv;
  }
};

// A job step inside a SLURM allocation (or its own allocation outside one), PMIx wire-up.
class SrunLauncher : public Launcher {
 public:
  std::string name() const override { return "srun"; }
  std::vector<std::string> prefix(const PointResources& r, const LaunchSite& site) const override {
    std::int64_t cpus = r.cpus_per_rank.value_or(std::max<std::int64_t>(
        1, site.cpus_on_node / std::max<std::int64_t>(1, r.ranks_per_node())));
    if (site.step_cpus_per_rank) cpus = *site.step_cpus_per_rank;
    std::vector<std::string> argv = {"srun",
                                     "--mpi=pmix",
                                     "--ntasks=" + std::to_string(r.ranks),
                                     "--nodes=" + std::to_string(r.nodes),
                                     "--cpus-per-task=" + std::to_string(cpus),
                                     "--exact"};
    if (!site.step_nodes.empty()) argv.push_back("--nodelist=" + join(site.step_nodes, ","));
    // A rank that dies (a crash, an uncaught signal, a non-zero exit) ends the step: srun's own
    // default lets the others wait in their next collective until the time limit. mpirun ends
    // the job the same way. launch.srun_args can say otherwise (--kill-on-bad-exit=0).
    if (!mentions(r.srun_args, "--kill-on-bad-exit") && !mentions_short(r.srun_args, 'K')) {
      argv.push_back("--kill-on-bad-exit=1");
    }
    if (r.gpus_per_rank > 0) argv.push_back("--gpus-per-task=" + std::to_string(r.gpus_per_rank));
    argv.insert(argv.end(), r.srun_args.begin(), r.srun_args.end());
    return argv;
  }
};

const Registry<Launcher>& registry() {
  static const Registry<Launcher> r(
      "launch.launcher", "launcher",
      {
          {"local", [] { return std::make_unique<LocalLauncher>(); }},
          {"mpirun", [] { return std::make_unique<MpirunLauncher>(); }},
          {"srun", [] { return std::make_unique<SrunLauncher>(); }},
      });
  return r;
}

}  // namespace

LaunchSite LaunchSite::detect() {
  LaunchSite site;
  const char* job = std::getenv("SLURM_JOB_ID");
  site.in_slurm_allocation = job != nullptr && *job != '\0';
  site.as_root = ::geteuid() == 0;
  site.cpus_on_node = usable_cpu_count();
  if (const char* cpus = std::getenv("SLURM_CPUS_ON_NODE"); site.in_slurm_allocation && cpus) {
    int n = std::atoi(cpus);
    if (n > 0) site.cpus_on_node = n;
  }
  return site;
}

std::vector<std::string> launcher_names() { return registry().names(); }

std::unique_ptr<Launcher> make_launcher(const std::string& name) { return registry().make(name); }

std::string resolve_launcher_name(const PointResources& r, const LaunchSite& site) {
  if (r.launcher != "auto") return r.launcher;
  if (site.in_slurm_allocation) return "srun";
  return r.ranks > 1 ? "mpirun" : "local";
}

PointCommand point_command(const Settings& settings, const Value& resolved, const LaunchSite& site,
                           const std::string& program, const std::string& config_path,
                           const std::string& out_dir) {
  PointResources r(settings.launch);
  PointCommand cmd;
  cmd.launcher = resolve_launcher_name(r, site);
  if (cmd.launcher == "local" && r.ranks > 1) {
    throw Error::input(
        Mark::in(config_path), "launch.launcher",
        "the local launcher starts one process, but launch.ranks is " + std::to_string(r.ranks),
        "use launch.launcher: mpirun (or srun, or auto)");
  }
  cmd.argv = make_launcher(cmd.launcher)->prefix(r, site);
  cmd.env = r.env;
  cmd.container = ContainerSpec(settings.container);
  std::unique_ptr<Workload> workload = workload_of(settings);
  std::vector<std::string> inner = workload->argv({program, config_path, out_dir, false, {}});
  if (cmd.container.enabled()) {
    std::unique_ptr<ContainerPlatform> platform = make_container_platform(cmd.container.runtime);
    std::string needs = platform->required_launcher();
    if (!needs.empty() && needs != cmd.launcher) {
      throw Error::input(Mark::in(config_path), "launch.launcher",
                         "container.runtime " + cmd.container.runtime + " runs through " + needs +
                             ", but this point's launcher is " + cmd.launcher,
                         "use launch.launcher: " + needs + " (or auto inside an allocation)");
    }
    // The container's own record of what ran, for bench-train's results.
    cmd.container.env.emplace("SWEEPBENCH_CONTAINER_RUNTIME", cmd.container.runtime);
    cmd.container.env.emplace("SWEEPBENCH_CONTAINER_IMAGE", cmd.container.image);
    if (std::string id = sif_id(cmd.container.image); !id.empty()) {
      cmd.container.env.emplace("SWEEPBENCH_CONTAINER_DIGEST", "sif-id:" + id);
    }
    // The point directory is bound at its own path, and bind lists are split at ',' (Apptainer,
    // Singularity) and ':' (every runtime): such a path would bind something else.
    if (size_t bad = out_dir.find_first_of(",:"); bad != std::string::npos) {
      throw Error::input(Mark::in("--out"), "",
                         "the point directory " + out_dir + " holds '" + out_dir[bad] +
                             "', which container runtimes read as a separator in bind mounts",
                         "choose an --out path without ',' or ':'");
    }
    ContainerContext ctx;
    ctx.gpus = r.gpus_per_rank > 0;
    ctx.out_dir = out_dir;
    ctx.env_keep = default_env_keep();
    for (const std::string& name : workload->env_keep()) ctx.env_keep.push_back(name);
    for (const auto& [name, value] : r.env) ctx.env_keep.push_back(name);
    for (const auto& [name, value] : cmd.container.env) {
      if (!starts_with(name, "SWEEPBENCH_")) ctx.env_keep.push_back(name);
    }
    // The workload's program as the image installs it, keeping only the variables listed.
    inner = workload->argv({workload->program(), config_path, out_dir, true, ctx.env_keep});
    std::vector<std::string> options = platform->launcher_options(cmd.container, ctx);
    cmd.argv.insert(cmd.argv.end(), options.begin(), options.end());
    inner = platform->wrap(cmd.container, ctx, inner);
    for (const auto& [k, v] : platform->launcher_env(cmd.container)) cmd.env[k] = v;
    cmd.container_context = ctx;
  }
  cmd.argv.insert(cmd.argv.end(), inner.begin(), inner.end());
  if (!r.setup.empty()) cmd.argv = with_setup_lines(resolved, r.setup, out_dir, cmd.argv);
  return cmd;
}

std::vector<std::string> with_setup_lines(const Value& resolved,
                                          const std::vector<std::string>& lines,
                                          const std::string& out_dir,
                                          const std::vector<std::string>& argv) {
  // A line that ends the shell (exit, or any failure under set -e) ends the point before its
  // program starts: the EXIT trap says which line did, in a line the runner takes as the
  // point's reason instead of blaming the program. Taken down before exec.
  std::string script =
      "trap 'printf \"sweepbench: launch.setup line %s ended the shell with exit code %s before "
      "the program started\\n\" \"$sweepbench_setup_line\" \"$?\" >&2' EXIT\n";
  size_t number = 0;
  for (const std::string& line : lines) {
    script +=
        "sweepbench_setup_line=" + shell_quote(std::to_string(++number) + " (" + line + ")") + "\n";
    // The line is the user's shell code; a value put into it is one quoted word.
    script +=
        render_placeholders(parse_placeholders(line, Mark::in("launch.setup"), "launch.setup"),
                            [&](const std::string& name) {
                              if (name == "out") return shell_quote(out_dir);
                              const Value* v = placeholder_config_value(resolved, name);
                              if (v == nullptr) {
                                throw unknown_placeholders({name}, Mark::in("launch.setup"),
                                                           "launch.setup", "see docs/commands.md");
                              }
                              return shell_quote(placeholder_text(*v));
                            });
    script += "\n";
  }
  script += "trap - EXIT\nexec \"$@\"\n";
  std::vector<std::string> out = {"bash", "-c", script, "sweepbench-setup"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace sweepbench
