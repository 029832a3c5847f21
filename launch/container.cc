#include "launch/container.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "config/config.h"
#include "config/settings.h"
#include "text/error.h"
#include "text/registry.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

using Bind = BindSpec;

// The point's directory first, then container.binds.
std::vector<Bind> binds_of(const ContainerSpec& spec, const ContainerContext& ctx) {
  std::vector<Bind> out = {Bind{ctx.out_dir, ctx.out_dir, false}};
  for (const std::string& b : spec.binds) {
    if (auto bind = parse_bind_spec(b)) out.push_back(*bind);  // the config rules checked them
  }
  return out;
}

std::string bind_text(const Bind& b) { return b.src + ":" + b.dst + (b.read_only ? ":ro" : ""); }

bool under_tmp(const std::string& path) { return path == "/tmp" || starts_with(path, "/tmp/"); }

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Whether container.image names a file or directory here (checked before running) rather than
// something the runtime resolves itself: a URI (docker://, library://, oras://), Podman's local
// storage, Charliecloud's image storage, or an enroot/pyxis registry reference (nvcr.io#...).
bool image_is_path(const std::string& runtime, const std::string& image) {
  if (image.find("://") != std::string::npos || runtime == "podman") return false;
  if (runtime == "charliecloud") return image.find('/') != std::string::npos;
  if (runtime == "enroot") {
    return image[0] == '/' || image[0] == '.' || ends_with(image, ".sqsh");
  }
  return true;  // Apptainer and Singularity: a SIF file or a sandbox directory
}

// Apptainer and SingularityCE: the same command line under two names.
class ApptainerPlatform : public ContainerPlatform {
 public:
  explicit ApptainerPlatform(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string program() const override { return name_; }
  std::vector<std::string> wrap(const ContainerSpec& spec, const ContainerContext& ctx,
                                const std::vector<std::string>& inner) const override {
    std::vector<std::string> argv = {name_, "exec"};
    if (ctx.gpus) argv.push_back("--nv");
    for (const Bind& b : binds_of(spec, ctx)) argv.insert(argv.end(), {"--bind", bind_text(b)});
    for (const auto& [k, v] : spec.env) argv.insert(argv.end(), {"--env", k + "=" + v});
    if (spec.workdir) argv.insert(argv.end(), {"--pwd", *spec.workdir});
    argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
    argv.push_back(spec.image);
    argv.insert(argv.end(), inner.begin(), inner.end());
    return argv;
  }

 private:
  std::string name_;
};

// Charliecloud's ch-run on a directory (or SquashFS) image. GPUs need no flag: ch-fromhost
// --nvidia puts the driver's libraries into the image beforehand (docs/containers.md). ch-run
// shares /tmp with the host already, and cannot mount over it again; its binds are read-write.
class CharliecloudPlatform : public ContainerPlatform {
 public:
  std::string name() const override { return "charliecloud"; }
  std::string program() const override { return "ch-run"; }
  // ch-run refuses to start without $USER, which batch and cron environments may lack.
  std::map<std::string, std::string> launcher_env(const ContainerSpec&) const override {
    if (std::getenv("USER") != nullptr) return {};
    const passwd* pw = ::getpwuid(::geteuid());
    return {{"USER", pw != nullptr ? pw->pw_name : std::to_string(::geteuid())}};
  }
  std::vector<std::string> wrap(const ContainerSpec& spec, const ContainerContext& ctx,
                                const std::vector<std::string>& inner) const override {
    std::vector<std::string> argv = {"ch-run"};
    for (const Bind& b : binds_of(spec, ctx)) {
      if (b.src == b.dst && under_tmp(b.dst)) continue;  // already there through /tmp
      argv.push_back("--bind=" + b.src + ":" + b.dst);
    }
    if (!spec.env.empty()) argv.push_back("--env-no-expand");  // values as given, no $ expansion
    for (const auto& [k, v] : spec.env) argv.push_back("--set-env=" + k + "=" + v);
    if (spec.workdir) argv.push_back("--cd=" + *spec.workdir);
    argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
    argv.insert(argv.end(), {spec.image, "--"});
    argv.insert(argv.end(), inner.begin(), inner.end());
    return argv;
  }
};

// Podman: a fresh container per rank that shares the host's network, IPC, PID and UTS namespaces
// (MPI's shared memory and PMIx need the first three; with its own host name each container
// would look like a node of its own to Open MPI, and the results would record container ids). It
// passes no host variable unless named, so the variables a rank needs go in as --env GLOB (Podman
// takes their values from the host).
class PodmanPlatform : public ContainerPlatform {
 public:
  std::string name() const override { return "podman"; }
  std::string program() const override { return "podman"; }
  std::vector<std::string> wrap(const ContainerSpec& spec, const ContainerContext& ctx,
                                const std::vector<std::string>& inner) const override {
    std::vector<std::string> argv = {"podman",     "run",        "--rm",      "--network=host",
                                     "--ipc=host", "--pid=host", "--uts=host"};
    if (ctx.gpus) argv.push_back("--device=nvidia.com/gpu=all");
    for (const Bind& b : binds_of(spec, ctx)) argv.push_back("--volume=" + bind_text(b));
    for (const std::string& name : ctx.env_keep) argv.push_back("--env=" + name);
    for (const auto& [k, v] : spec.env) argv.push_back("--env=" + k + "=" + v);
    if (spec.workdir) argv.push_back("--workdir=" + *spec.workdir);
    argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
    argv.push_back(spec.image);
    argv.insert(argv.end(), inner.begin(), inner.end());
    return argv;
  }
};

// enroot through pyxis, an srun plugin: srun itself starts each rank in the container, so the
// container is options to srun, not a wrapper. container.env goes in srun's environment and is
// named in --container-env so that it wins over the image's own values. GPUs come through
// enroot's hooks with the GPUs srun gives the task.
class EnrootPlatform : public ContainerPlatform {
 public:
  std::string name() const override { return "enroot"; }
  std::string program() const override { return "srun"; }
  std::string required_launcher() const override { return "srun"; }
  std::vector<std::string> launcher_options(const ContainerSpec& spec,
                                            const ContainerContext& ctx) const override {
    std::vector<std::string> argv = {"--container-image=" + spec.image};
    std::vector<std::string> mounts;
    for (const Bind& b : binds_of(spec, ctx)) mounts.push_back(bind_text(b));
    argv.push_back("--container-mounts=" + join(mounts, ","));
    if (spec.workdir) argv.push_back("--container-workdir=" + *spec.workdir);
    if (!spec.env.empty()) {
      std::vector<std::string> names;
      for (const auto& [k, v] : spec.env) names.push_back(k);
      argv.push_back("--container-env=" + join(names, ","));
    }
    argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
    return argv;
  }
  std::map<std::string, std::string> launcher_env(const ContainerSpec& spec) const override {
    return spec.env;
  }
  std::vector<std::string> wrap(const ContainerSpec&, const ContainerContext&,
                                const std::vector<std::string>& inner) const override {
    return inner;
  }
};

const Registry<ContainerPlatform>& registry() {
  static const Registry<ContainerPlatform> r(
      "container.runtime", "container runtime",
      {
          {"apptainer", [] { return std::make_unique<ApptainerPlatform>("apptainer"); }},
          {"singularity", [] { return std::make_unique<ApptainerPlatform>("singularity"); }},
          {"charliecloud", [] { return std::make_unique<CharliecloudPlatform>(); }},
          {"podman", [] { return std::make_unique<PodmanPlatform>(); }},
          {"enroot", [] { return std::make_unique<EnrootPlatform>(); }},
      },
      {"none"});
  return r;
}

}  // namespace

std::string sif_id(const std::string& path) {
  // SIF's global header: 32 bytes of launch script, "SIF_MAGIC\0", version (3), arch (3), then
  // the image's 16-byte UUID.
  std::ifstream in(path, std::ios::binary);
  char header[64] = {};
  if (!in.read(header, sizeof(header))) return "";
  if (std::string(header + 32, 9) != "SIF_MAGIC") return "";
  static const char* const kHex = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) id += '-';
    auto byte = static_cast<unsigned char>(header[48 + i]);
    id += kHex[byte >> 4];
    id += kHex[byte & 15];
  }
  return id;
}

std::vector<std::string> container_runtime_names() { return registry().names(); }

std::unique_ptr<ContainerPlatform> make_container_platform(const std::string& name) {
  return registry().make(name);
}

const std::vector<std::string>& default_env_keep() {
  // What a rank needs from its launcher (SLURM, Open MPI, PMIx, MPICH/Hydra), which GPUs it may
  // use, the runtimes' own markers (bench-train records the container from them), the locale
  // and the home directory, and sweepbench's own settings.
  static const std::vector<std::string> keep = {"SLURM_*",     "SLURMD_*",
                                                "OMPI_*",      "PMIX_*",
                                                "PMI_*",       "PRTE_*",
                                                "OPAL_*",      "HYDRA_*",
                                                "MPI_LOCAL*",  "CUDA_VISIBLE_DEVICES",
                                                "NVIDIA_*",    "ROCR_VISIBLE_DEVICES",
                                                "APPTAINER_*", "SINGULARITY_*",
                                                "CH_RUNNING",  "container",
                                                "ENROOT_*",    "PYXIS_*",
                                                "HOME",        "USER",
                                                "LANG",        "LC_ALL",
                                                "TZ",          "TMPDIR",
                                                "SWEEPBENCH_*"};
  return keep;
}

std::vector<std::string> container_runtimes_found() {
  std::vector<std::string> found;
  for (const std::string& name : registry().names()) {
    std::unique_ptr<ContainerPlatform> p = registry().make(name);
    if (name == "enroot" ? on_path("enroot") : on_path(p->program())) found.push_back(name);
  }
  return found;
}

void check_container(const ContainerSpec& spec, const ContainerContext& ctx,
                     const std::string& where) {
  if (!spec.enabled()) return;
  std::unique_ptr<ContainerPlatform> p = make_container_platform(spec.runtime);
  std::string needed = spec.runtime == "enroot" ? "srun" : p->program();
  if (!on_path(needed)) {
    std::vector<std::string> found = container_runtimes_found();
    throw Error::input(Mark::in(where), "container.runtime",
                       "container.runtime '" + spec.runtime + "' needs '" + needed +
                           "', which is not on PATH here",
                       found.empty()
                           ? "this machine has none of " + join(container_runtime_names(), ", ") +
                                 "; install one, or use container.runtime: none"
                           : "found here: " + join(found, ", "));
  }
  if (image_is_path(spec.runtime, spec.image)) {
    std::error_code ec;
    if (!fs::exists(spec.image, ec)) {
      throw Error::input(Mark::in(where), "container.image",
                         "the image '" + spec.image + "' does not exist",
                         "build it (docs/containers.md) or fix the path");
    }
  }
  if (spec.runtime == "charliecloud" && fs::is_directory(spec.image)) {
    for (const Bind& b : binds_of(spec, ctx)) {
      if (b.src == b.dst && under_tmp(b.dst)) continue;
      fs::path mount_point = fs::path(spec.image) / fs::path(b.dst).relative_path();
      std::error_code ec;
      if (fs::is_directory(mount_point, ec)) continue;
      fs::create_directories(mount_point, ec);
      if (ec) {
        throw Error::input(Mark::in(where), "container.binds",
                           "Charliecloud needs the mount point " + mount_point.string() +
                               " in the image, and it cannot be created: " + ec.message(),
                           "create it (mkdir -p) or bind to one of the image's /mnt/0../mnt/9");
      }
    }
  }
}

}  // namespace sweepbench
