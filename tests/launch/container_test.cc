// Golden commands for every container runtime x launcher (local, mpirun, srun), with and without
// GPUs, binds, env and workdir (CONTRIBUTING.md item 20), and the checks made before a point runs.
#include "launch/container.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "config/schema.h"
#include "launch/launcher.h"
#include "launch/workload.h"
#include "os/process.h"
#include "support/expect_error.h"
#include "support/point_command.h"
#include "support/temp_dir.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using Argv = std::vector<std::string>;

using testing::command_of;
using testing::config_with;

LaunchSite site(bool allocation) {
  LaunchSite s;
  s.in_slurm_allocation = allocation;
  s.cpus_on_node = 8;
  return s;
}

// The --env-keep list: the defaults, then launch.env's and container.env's names.
std::string keep(const Argv& extra = {}) {
  Argv all = default_env_keep();
  all.insert(all.end(), extra.begin(), extra.end());
  return join(all, ",");
}

// bench-train (or another workload's program) inside, as every runtime runs it.
Argv inner(const Argv& extra_keep = {}, const std::string& program = "bench-train") {
  return {program, "--env-keep", keep(extra_keep), "--config", "/r/t/config.yaml", "--out", "/r/t"};
}

Argv cat(std::initializer_list<Argv> parts) {
  Argv out;
  for (const Argv& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

PointCommand command(const std::vector<std::string>& sets, bool allocation = false,
                     const std::string& program = "/opt/sb/bench-train") {
  return command_of(config_with(sets), site(allocation), program, "/r/t/config.yaml", "/r/t");
}

const Argv kMpirun2 = {"mpirun", "-n", "2", "--bind-to", "none"};
const Argv kSrun2 = {
    "srun",    "--mpi=pmix",          "--ntasks=2", "--nodes=1", "--cpus-per-task=4",
    "--exact", "--kill-on-bad-exit=1"};
const Argv kSrun2Gpu = {
    "srun",    "--mpi=pmix",           "--ntasks=2",       "--nodes=1", "--cpus-per-task=4",
    "--exact", "--kill-on-bad-exit=1", "--gpus-per-task=1"};

// The options every test below sets, besides the runtime.
std::vector<std::string> full(const std::string& runtime, const std::string& image) {
  return {"container.runtime=" + runtime,
          "container.image=" + image,
          "container.binds=[/data:/data:ro, /scratch:/mnt/s]",
          "container.env={HF_HOME: /mnt/s/hf}",
          "container.workdir=/work",
          "container.extra_args=[--x]"};
}

TEST(DefaultEnvKeep, ListsWhatARankNeeds) {
  EXPECT_EQ(keep(),
            "SLURM_*,SLURMD_*,OMPI_*,PMIX_*,PMI_*,PRTE_*,OPAL_*,HYDRA_*,MPI_LOCAL*,"
            "CUDA_VISIBLE_DEVICES,NVIDIA_*,ROCR_VISIBLE_DEVICES,APPTAINER_*,SINGULARITY_*,"
            "CH_RUNNING,container,ENROOT_*,PYXIS_*,HOME,USER,LANG,LC_ALL,TZ,TMPDIR,SWEEPBENCH_*");
}

TEST(Apptainer, PlainUnderEachLauncher) {
  Argv wrapped = cat({{"apptainer", "exec", "--bind", "/r/t:/r/t", "--env",
                       "SWEEPBENCH_CONTAINER_IMAGE=/img/a.sif", "--env",
                       "SWEEPBENCH_CONTAINER_RUNTIME=apptainer", "/img/a.sif"},
                      inner()});
  std::vector<std::string> sets = {"container.runtime=apptainer", "container.image=/img/a.sif"};
  EXPECT_THAT(command(sets).argv, ElementsAreArray(wrapped));
  sets.push_back("launch.ranks=2");
  EXPECT_THAT(command(sets).argv, ElementsAreArray(cat({kMpirun2, wrapped})));
  EXPECT_THAT(command(sets, true).argv, ElementsAreArray(cat({kSrun2, wrapped})));
}

TEST(Apptainer, GpusBindsEnvWorkdirUnderEachLauncher) {
  for (const std::string runtime : {"apptainer", "singularity"}) {
    Argv wrapped =
        cat({{runtime, "exec", "--nv", "--bind", "/r/t:/r/t", "--bind", "/data:/data:ro", "--bind",
              "/scratch:/mnt/s", "--env", "HF_HOME=/mnt/s/hf", "--env",
              "SWEEPBENCH_CONTAINER_IMAGE=/img/a.sif", "--env",
              "SWEEPBENCH_CONTAINER_RUNTIME=" + runtime, "--pwd", "/work", "--x", "/img/a.sif"},
             inner({"HF_HOME"})});
    std::vector<std::string> sets = full(runtime, "/img/a.sif");
    sets.push_back("launch.gpus_per_rank=1");
    EXPECT_THAT(command(sets).argv, ElementsAreArray(wrapped)) << runtime;
    sets.push_back("launch.ranks=2");
    EXPECT_THAT(command(sets).argv, ElementsAreArray(cat({kMpirun2, wrapped}))) << runtime;
    EXPECT_THAT(command(sets, true).argv, ElementsAreArray(cat({kSrun2Gpu, wrapped}))) << runtime;
  }
}

TEST(Charliecloud, BindsOutsideTmpEnvAsGivenNoGpuFlag) {
  Argv wrapped =
      cat({{"ch-run", "--bind=/data:/data", "--bind=/scratch:/mnt/s", "--env-no-expand",
            "--set-env=HF_HOME=/mnt/s/hf", "--set-env=SWEEPBENCH_CONTAINER_IMAGE=/img/dir",
            "--set-env=SWEEPBENCH_CONTAINER_RUNTIME=charliecloud", "--cd=/work", "--x", "/img/dir",
            "--"},
           {"bench-train", "--env-keep", keep({"HF_HOME"}), "--config", "/tmp/r/t/config.yaml",
            "--out", "/tmp/r/t"}});
  std::vector<std::string> sets = full("charliecloud", "/img/dir");
  sets.push_back("launch.gpus_per_rank=1");
  auto at_tmp = [&](bool allocation) {
    return command_of(config_with(sets), site(allocation), "bench-train", "/tmp/r/t/config.yaml",
                      "/tmp/r/t")
        .argv;
  };
  // The point's directory is under /tmp, which ch-run shares already: no --bind for it.
  EXPECT_THAT(at_tmp(false), ElementsAreArray(wrapped));
  sets.push_back("launch.ranks=2");
  EXPECT_THAT(at_tmp(false), ElementsAreArray(cat({kMpirun2, wrapped})));
  EXPECT_THAT(at_tmp(true), ElementsAreArray(cat({kSrun2Gpu, wrapped})));
  // Elsewhere it is bound at the same path.
  EXPECT_THAT(command({"container.runtime=charliecloud", "container.image=/img/dir"}).argv,
              ElementsAreArray(
                  cat({{"ch-run", "--bind=/r/t:/r/t", "--env-no-expand",
                        "--set-env=SWEEPBENCH_CONTAINER_IMAGE=/img/dir",
                        "--set-env=SWEEPBENCH_CONTAINER_RUNTIME=charliecloud", "/img/dir", "--"},
                       inner()})));
}

TEST(Podman, SharesHostNamespacesAndNamesTheVariablesItPasses) {
  Argv env_flags;
  for (const std::string& g : default_env_keep()) env_flags.push_back("--env=" + g);
  env_flags.push_back("--env=HF_HOME");
  Argv wrapped = cat(
      {{"podman", "run", "--rm", "--network=host", "--ipc=host", "--pid=host", "--uts=host",
        "--device=nvidia.com/gpu=all", "--volume=/r/t:/r/t", "--volume=/data:/data:ro",
        "--volume=/scratch:/mnt/s"},
       env_flags,
       {"--env=HF_HOME=/mnt/s/hf", "--env=SWEEPBENCH_CONTAINER_IMAGE=localhost/sb:1",
        "--env=SWEEPBENCH_CONTAINER_RUNTIME=podman", "--workdir=/work", "--x", "localhost/sb:1"},
       inner({"HF_HOME"})});
  std::vector<std::string> sets = full("podman", "localhost/sb:1");
  sets.push_back("launch.gpus_per_rank=1");
  EXPECT_THAT(command(sets).argv, ElementsAreArray(wrapped));
  sets.push_back("launch.ranks=2");
  EXPECT_THAT(command(sets).argv, ElementsAreArray(cat({kMpirun2, wrapped})));
  EXPECT_THAT(command(sets, true).argv, ElementsAreArray(cat({kSrun2Gpu, wrapped})));
  // No GPUs asked for: no device.
  Argv plain = command({"container.runtime=podman", "container.image=localhost/sb:1"}).argv;
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "--device=nvidia.com/gpu=all"), 0);
}

TEST(Enroot, IsSrunOptionsThroughPyxisAndSrunOnly) {
  std::vector<std::string> sets = full("enroot", "/img/sb.sqsh");
  sets.insert(sets.end(), {"launch.ranks=2", "launch.gpus_per_rank=1"});
  PointCommand c = command(sets, true);
  EXPECT_THAT(c.argv,
              ElementsAreArray(cat({kSrun2Gpu,
                                    {"--container-image=/img/sb.sqsh",
                                     "--container-mounts=/r/t:/r/t,/data:/data:ro,/scratch:/mnt/s",
                                     "--container-workdir=/work",
                                     "--container-env=HF_HOME,SWEEPBENCH_CONTAINER_IMAGE,"
                                     "SWEEPBENCH_CONTAINER_RUNTIME",
                                     "--x"},
                                    inner({"HF_HOME"})})));
  EXPECT_EQ(c.env.at("HF_HOME"), "/mnt/s/hf");  // srun carries it in; pyxis lets it win
  EXPECT_EQ(c.env.at("SWEEPBENCH_CONTAINER_RUNTIME"), "enroot");
  sets.push_back("launch.launcher=srun");  // outside an allocation too, when asked for
  EXPECT_EQ(command(sets, false).launcher, "srun");
  for (const char* launcher : {"mpirun", "local"}) {
    std::vector<std::string> other = {"container.runtime=enroot", "container.image=/i.sqsh",
                                      std::string("launch.launcher=") + launcher};
    Error e = testing::error_of([&] { command(other); });
    EXPECT_EQ(e.key(), "launch.launcher");
    EXPECT_THAT(e.message(), HasSubstr("runs through srun")) << launcher;
  }
}

TEST(ContainerConfig, BindsMustBeAbsoluteSrcDstAndAMode) {
  for (const char* bad : {"data:/data", "/data:data", "/data:/data:rx", "/a::ro"}) {
    Error e = testing::error_of([&] {
      config_with({"container.runtime=apptainer", "container.image=/i.sif",
                   std::string("container.binds=[\"") + bad + "\"]"});
    });
    EXPECT_EQ(e.key(), "container.binds") << bad;
    EXPECT_THAT(e.message(), HasSubstr("SRC:DST[:ro]")) << bad;
  }
  EXPECT_NO_THROW(config_with({"container.runtime=apptainer", "container.image=/i.sif",
                               "container.binds=[/a, /b:/c, /d:/e:ro, /f:/g:rw]"}));
  // Apptainer and Singularity split --bind at ','; every runtime splits at ':'.
  for (const char* bad : {"/x,y:/c", "/x:/c,d", "/a,b"}) {
    Error e = testing::error_of([&] {
      config_with({"container.runtime=apptainer", "container.image=/i.sif",
                   std::string("container.binds=[\"") + bad + "\"]"});
    });
    EXPECT_EQ(e.key(), "container.binds") << bad;
    EXPECT_THAT(e.message(), HasSubstr("holds a ','")) << bad;
  }
  Error colon = testing::error_of([&] {
    config_with(
        {"container.runtime=apptainer", "container.image=/i.sif", "container.binds=[\"/a:b:/c\"]"});
  });
  EXPECT_THAT(colon.hint(), HasSubstr("a path that holds ':' cannot be bound"));
  Error e = testing::error_of([&] { make_container_platform("docker"); });
  EXPECT_EQ(e.key(), "container.runtime");
  EXPECT_THAT(e.detail(), HasSubstr("apptainer, singularity, charliecloud, podman, enroot"));
}

// I2: the point directory is bound at its own path in every runtime, so an --out with ',' or ':'
// is refused before anything runs, naming --out; without a container it is fine.
TEST(ContainerCommand, APointDirectoryWithACommaOrColonIsRefused) {
  for (const char* runtime : {"apptainer", "singularity", "charliecloud", "podman"}) {
    for (const char* dir : {"/runs/a,b/t", "/runs/a:b/t"}) {
      Error e = testing::error_of([&] {
        command_of(
            config_with({std::string("container.runtime=") + runtime, "container.image=/i.sif"}),
            site(false), "bench-train", std::string(dir) + "/config.yaml", dir);
      });
      EXPECT_EQ(e.mark().str(), "--out") << runtime << " " << dir;
      EXPECT_THAT(e.message(), HasSubstr("separator in bind mounts"));
      EXPECT_EQ(e.hint(), "choose an --out path without ',' or ':'");
    }
  }
  EXPECT_NO_THROW(command_of(config_with({}), site(false), "bench-train",
                             "/runs/a,b:c/t/config.yaml", "/runs/a,b:c/t"));
}

TEST(CheckContainer, MissingRuntimeListsWhatIsHereMissingImageSaysSo) {
  sweepbench::testing::TempDir dir;
  ContainerContext ctx;
  ctx.out_dir = "/tmp/point";
  ContainerSpec spec;
  spec.runtime = "apptainer";
  spec.image = dir.path() + "/a.sif";
  // This test's PATH has a fake ch-run only: apptainer is missing, charliecloud is found.
  std::string bin = dir.path() + "/bin";
  fs::create_directories(bin);
  std::ofstream(bin + "/ch-run") << "#!/bin/sh\n";
  fs::permissions(bin + "/ch-run", fs::perms::owner_all);
  std::string old_path = std::getenv("PATH");
  ::setenv("PATH", bin.c_str(), 1);
  Error e = testing::error_of([&] { check_container(spec, ctx, "p/config.yaml"); });
  EXPECT_EQ(e.key(), "container.runtime");
  EXPECT_THAT(e.message(), HasSubstr("needs 'apptainer', which is not on PATH"));
  EXPECT_EQ(e.hint(), "found here: charliecloud");
  spec.runtime = "charliecloud";
  e = testing::error_of([&] { check_container(spec, ctx, "p/config.yaml"); });
  EXPECT_EQ(e.key(), "container.image");
  EXPECT_THAT(e.message(), HasSubstr("does not exist"));
  // A directory image gets the mount points its binds need; /tmp is shared already.
  spec.image = dir.path() + "/img";
  fs::create_directories(spec.image);
  spec.binds = {"/scratch/data:/data:ro"};
  check_container(spec, ctx, "p/config.yaml");
  EXPECT_TRUE(fs::is_directory(spec.image + "/data"));
  EXPECT_FALSE(fs::exists(spec.image + "/tmp/point"));
  ::setenv("PATH", old_path.c_str(), 1);
}

TEST(SifId, ReadsTheUuidFromASifHeader) {
  sweepbench::testing::TempDir dir;
  std::string header(64, '\0');
  header.replace(32, 9, "SIF_MAGIC");
  for (int i = 0; i < 16; ++i) header[48 + i] = static_cast<char>(0x10 + i);
  std::ofstream(dir.path() + "/a.sif", std::ios::binary) << header << "rest";
  EXPECT_EQ(sif_id(dir.path() + "/a.sif"), "10111213-1415-1617-1819-1a1b1c1d1e1f");
  std::ofstream(dir.path() + "/b.sif") << "not a sif image at all, but long enough to be read "
                                          "as one if nobody checked the magic";
  EXPECT_EQ(sif_id(dir.path() + "/b.sif"), "");
  EXPECT_EQ(sif_id(dir.path() + "/none.sif"), "");
}

// ---- workloads x launchers x container runtimes ----------------------------------

struct WorkloadGolden {
  std::string name;
  Argv host;    // the program's argv on the host (its path from RunOptions::programs)
  Argv inside;  // and as a container runs it (the image's program)
  Argv sets;    // what its config needs besides benchmark
};

// One entry per registered workload: registering a workload without its golden commands fails.
std::vector<WorkloadGolden> workload_goldens() {
  return {{"train",
           {"/opt/sb/bench-train", "--config", "/r/t/config.yaml", "--out", "/r/t"},
           inner(),
           {}},
          {"infer",
           {"/opt/sb/bench-infer", "--config", "/r/t/config.yaml", "--out", "/r/t"},
           inner({}, "bench-infer"),
           {}},
          // The user's program is bench-command's to run: the point's argv is bench-command's.
          {"command",
           {"/opt/sb/bench-command", "--config", "/r/t/config.yaml", "--out", "/r/t"},
           inner({"PATH"}, "bench-command"),
           {"command.argv=[python3, train.py, --lr, '{params.lr}']", "params.lr=0.1"}},
          // The server and its load are bench-serve's to run, as a command is bench-command's.
          {"serve",
           {"/opt/sb/bench-serve", "--config", "/r/t/config.yaml", "--out", "/r/t"},
           inner({"PATH"}, "bench-serve"),
           {"serve.argv=[vllm, serve, m, --port, '{port}']", "serve.load.levels=[1, 2]"}}};
}

bool ends_with(const Argv& argv, const Argv& tail) {
  return argv.size() >= tail.size() &&
         std::equal(tail.begin(), tail.end(), argv.end() - tail.size());
}

TEST(Workloads, EveryRegisteredWorkloadHasGoldenCommands) {
  Argv names;
  for (const WorkloadGolden& g : workload_goldens()) names.push_back(g.name);
  EXPECT_EQ(names, workloads().names());
}

TEST(Workloads, TheSchemaListsTheRegisteredNames) {
  EXPECT_EQ(Schema::get().find("benchmark")->choices, workloads().names());
  Argv launchers = {"auto"};
  for (const std::string& n : launcher_names()) launchers.push_back(n);
  std::sort(launchers.begin() + 1, launchers.end());
  Argv schema_launchers = Schema::get().find("launch.launcher")->choices;
  std::sort(schema_launchers.begin() + 1, schema_launchers.end());
  EXPECT_EQ(schema_launchers, launchers);
  Argv runtimes = {"none"};
  for (const std::string& n : container_runtime_names()) runtimes.push_back(n);
  Argv schema_runtimes = Schema::get().find("container.runtime")->choices;
  std::sort(runtimes.begin(), runtimes.end());
  std::sort(schema_runtimes.begin(), schema_runtimes.end());
  EXPECT_EQ(schema_runtimes, runtimes);
}

TEST(Workloads, ArgvUnderEveryLauncherAndContainerRuntime) {
  struct LauncherCase {
    std::string name;
    std::vector<std::string> sets;
    bool allocation;
    Argv prefix;
  };
  const std::vector<LauncherCase> launchers = {
      {"local", {"launch.ranks=1"}, false, {}},
      {"mpirun", {"launch.ranks=2"}, false, kMpirun2},
      {"srun", {"launch.ranks=2"}, true, kSrun2},
  };
  Argv runtimes = {"none"};
  for (const std::string& n : container_runtime_names()) runtimes.push_back(n);
  for (const WorkloadGolden& w : workload_goldens()) {
    for (const LauncherCase& l : launchers) {
      for (const std::string& runtime : runtimes) {
        std::string what = w.name + " x " + l.name + " x " + runtime;
        std::vector<std::string> sets = l.sets;
        sets.push_back("benchmark=" + w.name);
        sets.insert(sets.end(), w.sets.begin(), w.sets.end());
        if (runtime != "none") {
          sets.push_back("container.runtime=" + runtime);
          sets.push_back("container.image=/img/a.sif");
        }
        if (w.name == "serve" && l.sets.front() != "launch.ranks=1") {
          // A serve point is one server and one client: more ranks are refused at plan time.
          EXPECT_THROW(command(sets, l.allocation, w.host.front()), Error) << what;
          continue;
        }
        if (runtime == "enroot" && l.name != "srun") {
          // pyxis's containers start only through srun.
          EXPECT_THROW(command(sets, l.allocation, w.host.front()), Error) << what;
          continue;
        }
        PointCommand cmd = command(sets, l.allocation, w.host.front());
        EXPECT_EQ(cmd.launcher, l.name) << what;
        EXPECT_TRUE(std::equal(l.prefix.begin(), l.prefix.end(), cmd.argv.begin())) << what;
        if (runtime == "none") {
          EXPECT_THAT(cmd.argv, ElementsAreArray(cat({l.prefix, w.host}))) << what;
        } else {
          EXPECT_TRUE(ends_with(cmd.argv, w.inside)) << what << ": " << join(cmd.argv, " ");
        }
      }
    }
  }
}

// What with_setup_lines puts around the lines: the EXIT trap that names a line that ended the
// shell, each line's number and text before it, the trap taken down before exec.
const char* const kSetupTrap =
    "trap 'printf \"sweepbench: launch.setup line %s ended the shell with exit code %s before the "
    "program started\\n\" \"$sweepbench_setup_line\" \"$?\" >&2' EXIT\n";
const char* const kSetupExec = "trap - EXIT\nexec \"$@\"\n";

// launch.setup: the lines run in one bash that then becomes the point's command; a value put into
// a line is one single-quoted word whatever it holds.
TEST(SetupLines, WrapTheWholeCommandInOneShell) {
  PointCommand cmd =
      command({"launch.ranks=2", "params.env=pt22",
               "launch.setup=['module load cuda/12.4', 'conda activate {params.env}']"});
  EXPECT_THAT(cmd.argv,
              ElementsAreArray(
                  cat({{"bash", "-c",
                        std::string(kSetupTrap) +
                            "sweepbench_setup_line='1 (module load cuda/12.4)'\n"
                            "module load cuda/12.4\n"
                            "sweepbench_setup_line='2 (conda activate {params.env})'\n"
                            "conda activate pt22\n" +
                            kSetupExec,
                        "sweepbench-setup"},
                       kMpirun2,
                       {"/opt/sb/bench-train", "--config", "/r/t/config.yaml", "--out", "/r/t"}})));
  // Inside a container the setup runs on the host, before the runtime starts.
  PointCommand boxed = command(
      {"launch.setup=['echo {out}']", "container.runtime=apptainer", "container.image=/img/a.sif"});
  EXPECT_EQ(boxed.argv[2], std::string(kSetupTrap) +
                               "sweepbench_setup_line='1 (echo {out})'\necho /r/t\n" + kSetupExec);
  EXPECT_EQ(boxed.argv[4], "apptainer");
}

TEST(SetupLines, HostileValuesStayOneWord) {
  const std::string hostile = "a'b `touch x` $(touch y) \"q\"\nnext; rm -rf z";
  Value config = config_with({"params.env=" + quote_json(hostile)});
  std::vector<std::string> argv =
      with_setup_lines(config, {"conda activate {params.env}"}, "/r/my dir's", {"prog"});
  EXPECT_EQ(argv[2], std::string(kSetupTrap) +
                         "sweepbench_setup_line='1 (conda activate {params.env})'\n"
                         "conda activate 'a'\\''b `touch x` $(touch y) \"q\"\nnext; rm -rf z'\n" +
                         kSetupExec);
}

int run_argv(const std::vector<std::string>& argv) { return capture_process(argv).exit_code; }

// A real bash runs the lines: the hostile value arrives verbatim as one argument, nothing in it
// runs, and the command after the lines gets its own argv untouched.
TEST(SetupLines, ARealShellPassesHostileValuesVerbatim) {
  sweepbench::testing::TempDir dir;
  const std::string hostile = "pt'22 `touch " + dir.path() + "/b` $(touch " + dir.path() +
                              "/d) \"x\" ; touch " + dir.path() + "/s\nline2 \\ $HOME";
  Value config = config_with({"params.env=" + quote_json(hostile)});
  std::string out_file = dir.path() + "/got";
  std::vector<std::string> argv = with_setup_lines(
      config, {"printf '%s' {params.env} > " + out_file, "echo set-up {out} > " + out_file + "2"},
      dir.path() + "/o $(touch " + dir.path() + "/o)",
      {"sh", "-c", "echo \"$1\" > \"$2\"", "sh", "$(not run)", out_file + "3"});
  ASSERT_EQ(run_argv(argv), 0);
  EXPECT_EQ(sweepbench::testing::read_text(out_file), hostile);
  EXPECT_EQ(sweepbench::testing::read_text(out_file + "2"),
            "set-up " + dir.path() + "/o $(touch " + dir.path() + "/o)\n");
  EXPECT_EQ(sweepbench::testing::read_text(out_file + "3"), "$(not run)\n");
  for (const char* planted : {"/b", "/d", "/s", "/o"}) {
    EXPECT_FALSE(fs::exists(dir.path() + planted)) << planted;
  }
}

// A setup line that ended the shell (set -e and a failure, or exit) was blamed
// on the program, which never started. The shell names the line; a failing line without set -e
// still does not stop the point (docs/commands.md).
TEST(SetupLines, ALineThatEndsTheShellIsNamed) {
  sweepbench::testing::TempDir dir;
  Value config = config_with({});
  std::vector<std::string> argv = with_setup_lines(config, {"set -e", "false", "echo unreached"},
                                                   dir.path(), {"sh", "-c", "echo program"});
  Captured r = capture_process(argv);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "sweepbench: launch.setup line 2 (false) ended the shell with exit code 1 before the "
            "program started\n");
  EXPECT_EQ(r.out, "");
  // The line as written is named through one single-quoted word: nothing in it runs there.
  const std::string hostile =
      "false # $(touch " + dir.path() + "/a) `touch " + dir.path() + "/b` 'q' \"d\" x,y:z";
  argv = with_setup_lines(config, {"set -e", hostile}, dir.path(), {"true"});
  r = capture_process(argv);
  EXPECT_EQ(r.err, "sweepbench: launch.setup line 2 (" + hostile +
                       ") ended the shell with exit code 1 before the program started\n");
  EXPECT_FALSE(fs::exists(dir.path() + "/a"));
  EXPECT_FALSE(fs::exists(dir.path() + "/b"));
  argv = with_setup_lines(config, {"false", "echo set-up"}, dir.path(),
                          {"sh", "-c", "echo program; exit 4"});
  r = capture_process(argv);
  EXPECT_EQ(r.exit_code, 4);  // the program's own, and no word from the trap
  EXPECT_EQ(r.out, "set-up\nprogram\n");
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace sweepbench
