#include "launch/bench_sweep_cli.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "config/config.h"
#include "config/schema.h"
#include "config/table.h"
#include "config/yaml_io.h"
#include "launch/runner.h"
#include "launch/slurm.h"
#include "launch/status.h"
#include "launch/submit.h"
#include "launch/workload.h"
#include "layout/manifest.h"
#include "os/fs.h"
#include "os/process.h"
#include "sweep/expand.h"
#include "sweep/plan_output.h"
#include "sweep/references.h"
#include "sweep/sweep_spec.h"
#include "sweep/time_estimate.h"
#include "text/error.h"
#include "text/terminal.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace po = boost::program_options;

// The programs of the registered workloads (launch/workload.h): each gets an option naming the
// one to run (--bench-train PATH).
std::vector<std::string> workload_programs() {
  std::vector<std::string> out;
  for (const std::string& name : workloads().names())
    out.push_back(workloads().make(name)->program());
  return out;
}

void add_program_options(po::options_description& desc, const std::string& what) {
  for (const std::string& program : workload_programs()) {
    desc.add_options()(program.c_str(), po::value<std::string>(),
                       ("The " + program + " " + what).c_str());
  }
}

const char* const kVersion = SWEEPBENCH_VERSION;

const char* const kUsage = R"(bench-sweep: plan benchmark sweeps and track their points.

Usage: bench-sweep <command> [options]

Commands:
  plan    Expand a sweep file into fully resolved points and print them; with --out, write
          each point's config.yaml and a manifest.
            bench-sweep plan sweeps/quickstart.yaml --out runs/quickstart
  run     Plan as `plan --out` does, then run the points here: one after another, with mpirun
          or a plain exec, or as srun job steps inside a SLURM allocation. Finished points are
          kept, so running it again goes on where it stopped.
            bench-sweep run sweeps/quickstart.yaml --out runs/quickstart
  submit  Plan, then submit the points that are not ok yet as SLURM job arrays, one array per
          set of resources, and return at once.
            bench-sweep submit sweeps/gpt2-scaling.yaml --out runs/scaling --max-parallel 4
  status  One line per point of a sweep's directory (ok, running, pending, timeout...), from
          its files and, when it answers, from SLURM.
            bench-sweep status --out runs/scaling
  keys    List every config key with its type, default and meaning.
            bench-sweep keys --format md

Run 'bench-sweep <command> --help' for a command's options.
Docs: docs/sweeps.md (sweep files), docs/config.md (keys), docs/exit-codes.md.
Exit codes: 0 ok, 2 bad input, 3 conflicting output, 4 file-system error,
1 a point did not end ok, 6 stopped by a signal.
)";

const char* const kRunHelp =
    R"(bench-sweep run: run a sweep's points on this machine or in this allocation.

Usage: bench-sweep run SWEEP.yaml --out DIR [--scenario NAME]... [--only INDEX|TAG,...]
                       [--set KEY=VALUE]... [--dry-run] [--force] [--retry-failed]
                       [--jobs N|auto] [--interleave] [--warmup N]
                       [--orphan-wait SECONDS]

Plans exactly as `bench-sweep plan --out DIR` does, then runs the points in order. Each point
runs its workload's program (the key `benchmark`: train runs `bench-train`, infer `bench-infer`,
command `bench-command` with your program) through its launcher: srun --mpi=pmix inside a SLURM
allocation, mpirun for several ranks outside one, a plain exec for one rank (launch.launcher
overrides), in its container if it names one. Its logs go
to DIR/<tag>/logs/, its status (ok, oom, failed, timeout, cancelled, skipped, ...) to
DIR/<tag>/status.json and the manifest. A point that fails never stops the sweep.

Running again keeps every ok point with the same config_hash whose results read back and reruns
the points that were interrupted (cancelled, timeout, preempted, or whose runner died); failed
and oom points rerun only with --retry-failed, and --force reruns everything. An earlier
attempt's files move to DIR/<tag>/attempts/N/: nothing is deleted. Two runners on the same DIR
never run one point twice; a point whose killed runner's processes still run is waited for
(--orphan-wait, 600 s), then run. A point whose directory holds what sweepbench cannot use (a
claim that is a FIFO or a link) is not run, and the run exits 4.
Ctrl-C (or SIGTERM) stops the running points after their current step, records them as
cancelled and stops; a second Ctrl-C kills them.

--jobs N runs up to N points at once on this machine, each on CPUs of its own (its affinity:
launch.ranks x launch.cpus_per_rank, or an equal share of the CPUs) and GPUs of its own
(CUDA_VISIBLE_DEVICES: launch.ranks x launch.gpus_per_rank); --jobs auto as many as the CPUs and
GPUs hold (one CPU a rank unless launch.cpus_per_rank says more). A point with launch.exclusive:
node runs alone. Inside a SLURM allocation the points are srun steps spread over its nodes
(--nodelist, --cpus-per-task, --exact). Each status.json says where its point ran and which
points ran beside it. The default, 1, runs one point at a time on the whole machine.

--interleave runs the repeats in rounds: every point's first repeat, then every point's second,
and so on, so that a machine that gets busier or cooler halfway affects every point alike (the
way to run the two sides of a comparison, docs/compare.md). Without it a point's repeats run
back to back, in the points' order.

--warmup N runs each point N times more before any measured repeat, one at a time on the whole
machine, and leaves those runs out: their files go to DIR/.warmup/<tag>/, which no table reads,
and no status.json records them. A point's repeats share one warm-up. What warms up (the page
cache, a container's image, a GPU's clocks, a compiler's cache) then warms up for every side
alike, not for the first point only.

The sweep file's references (docs/references.md) are checked as each point ends ok, and again
on the ok points a rerun keeps: a point whose metric's whole 95% interval lies outside its
reference's bounds is named, with the reference's file:line.

Examples:
  bench-sweep run sweeps/quickstart.yaml --out runs/quickstart
  bench-sweep run sweeps/gpt2-scaling.yaml --out runs/scaling --only 0,3 --dry-run
  bench-sweep run sweeps/llama-bench.yaml --out runs/llama --jobs auto
  salloc -N 2 bench-sweep run sweeps/gpt2-scaling.yaml --out runs/scaling

Docs: docs/running.md. Exit codes: 0 every point ok, 2 bad input, 3 conflicting output,
4 file-system error, 1 a point did not end ok, 6 stopped by a signal, 10 every point ok but one
missed a performance reference.

Options:
)";

const char* const kSubmitHelp =
    R"(bench-sweep submit: run a sweep's points as SLURM job arrays.
Usage: bench-sweep submit SWEEP.yaml --out DIR [--max-parallel K] [--scenario NAME]...
                          [--only INDEX|TAG,...] [--set KEY=VALUE]... [--dry-run] [--force]
                          [--retry-failed] [--points-per-job K|auto] [--jobs N|auto]
Plans as `bench-sweep plan --out DIR` does, then groups the points that are not ok yet by the
resources they ask for (launch.nodes, launch.ranks, launch.gpus_per_rank, launch.cpus_per_rank,
slurm.*) and submits one job array per group, cut to the cluster's MaxArraySize and throttled to
K tasks at a time with --max-parallel. Array task i runs `bench-sweep run --only TAG` for its
point, so finished points are kept, interrupted ones rerun, and a point that reaches its time
limit records `timeout` (--signal=B:USR1@slurm.signal_seconds) and requeues its task up to
slurm.max_requeue times. The scripts go to DIR/submit/, the job ids to DIR/manifest.json. It
returns once the jobs are queued; points already queued or running are not submitted twice.

Short points wait more on the scheduler than they run: --points-per-job K packs K points into
each array task (`bench-sweep run --only T1,...,TK --jobs N`), N at once (--jobs; auto fills
whole nodes when slurm.exclusive is true); a shared job asks for N points' tasks, and its --time
is slurm.time times the rounds of points it runs. --points-per-job auto takes K from the points
that ran already: enough to fill half of the time limit (slurm.time, else the partition's
MaxTime, else an hour) at their median time.
Examples:
  bench-sweep submit sweeps/gpt2-scaling.yaml --out runs/scaling --max-parallel 4
  bench-sweep submit sweeps/gpt2-scaling.yaml --out runs/scaling --dry-run
  bench-sweep submit sweeps/llama-bench.yaml --out runs/llama --points-per-job 20 --jobs 4
  bench-sweep status --out runs/scaling
Docs: docs/running.md. Exit codes: 0 submitted (or nothing to submit), 2 bad input or sbatch
refused, 3 conflicting output, 4 file-system error.
Options:
)";

const char* const kStatusHelp = R"(bench-sweep status: where each point of a sweep stands.
Usage: bench-sweep status --out DIR [--format table|json]
One line per point: index, status (pending, running, ok, oom, failed, timeout, preempted,
cancelled, node_fail, skipped, incomplete), tag, SLURM job and a note, then the totals. It reads
DIR's manifest, status.json files, claims and rank files, and asks squeue (then sacct) about the
jobs that ran or were submitted there: a job that ended by its time limit, a preemption or a
node failure shows as such even when its runner could not record it. incomplete: the files do
not make one finished run (its runner is gone, a rank file is missing or cut short). bench-extract
gives each point the same status (docs/running.md). An ok point that missed the sweep file's
performance references says which in its note (docs/references.md).
Examples:
  bench-sweep status --out runs/scaling
  bench-sweep status --out runs/scaling --format json
Exit codes: 0, 2 bad input (no manifest in DIR), 10 a point missed a performance reference.
Options:
)";

const char* const kPlanHelp = R"(bench-sweep plan: expand a sweep file into points.

Usage: bench-sweep plan SWEEP.yaml [--scenario NAME]... [--set KEY=VALUE]... [--out DIR]
                        [--format table|json|csv] [--max-points N]
                        [--estimate [--calibrate RESULTS_DIR]...]

Prints one row per point: its index, its tag (the directory name under --out) and the keys that
vary, then the count. Every key and value is checked first; a bad sweep file is an error with
file:line:column and nothing is written.

With --out DIR it writes DIR/<tag>/config.yaml (the resolved config of each point) and
DIR/manifest.json. Running it again is a no-op; a DIR/<tag>/config.yaml that holds a different
config is an error (exit 3) and nothing is changed.

With --estimate each row also gives the point's predicted memory per rank: the peak, building the
model, a step, and the step's parts (model states, weight copies, activations, the head's logits
and loss; for generation the weights, the KV cache and the prefill), from the shapes alone
(docs/metrics.md, "Predicted memory"); then its predicted time: a step (or a generation),
tokens/s, the point's device-hours and, with hardware.price_per_hour, its cost; the sweep's
total last (docs/metrics.md, "Predicted time and cost"). A GPU's rate is the table's peak for
hardware.name at hardware.assumed_mfu (default: sweepbench's measured MFU); a CPU's, a
reference CPU's measured rate a core. --calibrate RESULTS_DIR scales each model's times by the
median of measured over predicted of its points that ran ok there (marked *): one is enough.

Examples:
  bench-sweep plan sweeps/quickstart.yaml
  bench-sweep plan sweeps/gpt2-scaling.yaml --estimate
  bench-sweep plan sweeps/gpt2-scaling.yaml --estimate --calibrate runs/scaling
  bench-sweep plan sweeps/llama2-7b-context.yaml --set train.steps=20 --format csv
  bench-sweep plan sweeps/container-compare.yaml --scenario ngc-24.02 --out runs/cmp

Options:
)";

const char* const kKeysHelp = R"(bench-sweep keys: list every config key.

Usage: bench-sweep keys [--format table|md]

Example:
  bench-sweep keys --format md > docs/config-keys.md

Options:
)";

void print_options(const po::options_description& desc, std::ostream& out) {
  std::ostringstream text;
  text << desc;
  out << text.str();
}

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc,
                        const po::positional_options_description& positional) {
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(positional).run(), vm);
  po::notify(vm);
  return vm;
}

// The options plan and run share: --help, the sweep file, --scenario, --set, --max-points.
// A reference whose scenario or `when` no point has is a typo that would silently disable it.
void warn_unused_references(const Plan& plan, std::ostream& err) {
  for (const std::string& where : references_for_no_point(plan)) {
    err << "bench-sweep: warning: " << where
        << " applies to no point of the sweep (its scenario and when match none)\n";
  }
}

void add_plan_options(po::options_description& desc) {
  desc.add_options()("help,h", "Show this help")("sweep", po::value<std::string>(),
                                                 "The sweep file")(
      "scenario", po::value<std::vector<std::string>>()->composing(),
      "Only this scenario (repeatable, or comma-separated)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "Override KEY=VALUE in every point's base (repeatable; VALUE is YAML)")(
      // Read as a signed number and checked: boost reads "-5" into a size_t as 2^64 - 5, which
      // turned the guard off.
      "max-points",
      po::value<long long>()->default_value(static_cast<long long>(kDefaultMaxPoints)),
      "Refuse sweeps with more points than this");
}

// The values of --scenario or --only, split at commas. An empty one is refused: selecting nothing
// by mistake (--only "$UNSET") must not select every point.
std::vector<std::string> selectors(const po::variables_map& vm, const char* option) {
  const auto& given = vm[option].as<std::vector<std::string>>();
  for (const std::string& value : given) {
    std::vector<std::string> parts = split_commas({value});
    size_t commas = static_cast<size_t>(std::count(value.begin(), value.end(), ','));
    if (parts.size() != commas + 1) {
      throw Error::input(
          Mark::in("--" + std::string(option) + " '" + value + "'"), "",
          "an empty " +
              std::string(option == std::string("only") ? "index or tag" : "scenario name") +
              " selects nothing",
          option == std::string("only") ? "give indices or tags; bench-sweep plan lists them"
                                        : "name a scenario; the sweep file lists them");
    }
  }
  return split_commas(given);
}

// Parses with the sweep file as the one positional argument.
po::variables_map parse_with_sweep(const std::vector<std::string>& args,
                                   const po::options_description& desc) {
  po::positional_options_description positional;
  positional.add("sweep", 1);
  return parse(args, desc, positional);
}

// --max-points, --scenario and --set, as plan and run share them.
size_t max_points_of(const po::variables_map& vm) {
  long long n = vm["max-points"].as<long long>();
  if (n < 1) {
    throw Error::input(Mark::in("--max-points " + std::to_string(n)), "",
                       "must be 1 or more: it is the most points a sweep may expand to",
                       "give a positive number, e.g. --max-points 50000");
  }
  return static_cast<size_t>(n);
}

PlanOptions plan_options_of(const po::variables_map& vm) {
  PlanOptions options;
  options.max_points = max_points_of(vm);
  if (vm.count("scenario")) {
    options.scenarios = selectors(vm, "scenario");
  }
  if (vm.count("set")) {
    options.overrides = parse_overrides(vm["set"].as<std::vector<std::string>>());
  }
  return options;
}

int run_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  add_plan_options(desc);
  desc.add_options()("out,o", po::value<std::string>(),
                     "Write the points' configs and manifest.json here")(
      "format", po::value<std::string>()->default_value("table"), "table, json or csv")(
      "estimate", po::bool_switch(), "Predict each point's memory per rank, time and cost")(
      "calibrate", po::value<std::vector<std::string>>()->composing(),
      "With --estimate: scale each model's predicted time by its measured points in this "
      "results tree (the median of measured over predicted; repeatable)");
  po::variables_map vm = parse_with_sweep(args, desc);
  if (vm.count("help")) {
    out << kPlanHelp;
    print_options(desc, out);
    return kExitOk;
  }
  if (!vm.count("sweep")) {
    err << "bench-sweep plan: error: no sweep file given\n"
        << "usage: bench-sweep plan SWEEP.yaml [options]  (bench-sweep plan --help)\n";
    return kExitUsage;
  }
  PlanFormat format = parse_plan_format(vm["format"].as<std::string>());
  if (vm.count("calibrate") && !vm["estimate"].as<bool>()) {
    err << "bench-sweep plan: error: --calibrate: only with --estimate\n";
    return kExitUsage;
  }
  const std::vector<std::string> calibrate =
      vm.count("calibrate") ? vm["calibrate"].as<std::vector<std::string>>()
                            : std::vector<std::string>{};
  check_calibration_dirs(calibrate);  // before anything is written
  SweepSpec spec = load_sweep_file(vm["sweep"].as<std::string>());
  // No points held: they are rebuilt one at a time for the writer and the printer.
  PlanOptions options = plan_options_of(vm);
  options.hold_points = false;
  Plan plan = plan_sweep(spec, options);
  warn_unused_references(plan, err);
  PlanWriteResult written;
  bool wrote = false;
  if (vm.count("out")) {
    written = write_plan(plan, vm["out"].as<std::string>());
    wrote = true;
  }
  if (vm["estimate"].as<bool>()) {
    print_estimate(plan, format, out, calibrate);
  } else {
    print_plan(plan, format, out);
  }
  if (wrote) {
    std::ostream& summary = format == PlanFormat::kTable ? out : err;
    // The directory as typed may hold control characters: shown escaped (text/terminal.h).
    summary << "# " << terminal_safe(vm["out"].as<std::string>()) << ": " << written.written
            << " written, " << written.updated << " updated, " << written.unchanged
            << " unchanged; manifest " << (written.manifest_changed ? "written" : "unchanged")
            << "\n";
  }
  return kExitOk;
}

// run and submit need both the sweep file and --out DIR; says so when one is missing.
bool lacks_sweep_or_out(const std::string& command, const po::variables_map& vm,
                        std::ostream& err) {
  if (vm.count("sweep") && vm.count("out")) return false;
  err << "bench-sweep " << command
      << ": error: " << (vm.count("sweep") ? "--out DIR is missing" : "no sweep file given")
      << "\nusage: bench-sweep " << command << " SWEEP.yaml --out DIR [options]  (bench-sweep "
      << command << " --help)\n";
  return true;
}

// Writes the plan into DIR (as `plan --out` does) under DIR's lock, before running or submitting;
// with `only`, the config files of those points only (write_plan).
void write_plan_locked(const Plan& plan, const std::string& out_dir, std::ostream& out,
                       const std::set<std::string>* only = nullptr) {
  make_directories(out_dir);
  DirLock lock(out_dir);
  PlanWriteResult written = write_plan(plan, out_dir, only);
  out << "# plan: " << written.written << " written, " << written.updated << " updated, "
      << written.unchanged << " unchanged\n";
}

// This bench-sweep's own path; empty when /proc cannot tell.
std::filesystem::path self_path() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self;
}

// --jobs N|auto.
int parse_jobs(const std::string& text) {
  if (text == "auto") return kJobsAuto;
  char* end = nullptr;
  long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 1 || n > kMaxStopGroups) {
    throw Error::input(
        Mark::in("--jobs " + text), "",
        "is neither a number of points from 1 to " + std::to_string(kMaxStopGroups) + " nor auto",
        "--jobs 4, or --jobs auto (as many as the CPUs and GPUs hold)");
  }
  return static_cast<int>(n);
}

// `terminal`: the raw stdout (for the live progress line where it is a terminal).
// How a run ends: stopped, a file-system error, not all ok, a reference missed, or ok.
int run_exit_code(const RunReport& report, bool dry_run) {
  if (report.stop_signal != 0) return kExitStopped;
  if (dry_run) return kExitOk;
  if (!report.unusable.empty()) return kExitIo;
  if (!report.all_ok()) return kExitNotAllOk;
  return report.missed_reference.empty() ? kExitOk : kExitReferenceMissed;
}

// `bench-sweep run`'s options from its command line (all but the sweep's own).
RunOptions run_options_of(const po::variables_map& vm, std::ostream* terminal) {
  RunOptions run;
  run.out_dir = vm["out"].as<std::string>();
  if (vm.count("only")) run.only = selectors(vm, "only");
  run.force = vm.count("force") > 0;
  run.retry_failed = vm.count("retry-failed") > 0;
  run.dry_run = vm.count("dry-run") > 0;
  run.interleave = vm.count("interleave") > 0;
  run.warmup = vm["warmup"].as<int>();
  if (run.warmup < 0 || run.warmup > 100) {
    throw Error::input(Mark::in("--warmup"), "", "must be from 0 to 100 runs",
                       "give the runs of each point to leave out: 1 is usual");
  }
  run.jobs = parse_jobs(vm["jobs"].as<std::string>());
  run.orphan_wait_seconds = vm["orphan-wait"].as<double>();
  if (!(run.orphan_wait_seconds >= 0 && run.orphan_wait_seconds <= 1e6)) {
    throw Error::input(Mark::in("--orphan-wait"), "", "must be from 0 to 1,000,000 seconds",
                       "give seconds: 600 is the default, 0 does not wait");
  }
  if (terminal != nullptr && ::isatty(STDOUT_FILENO) != 0) {
    const char* term = std::getenv("TERM");
    if (term != nullptr && *term != '\0' && std::string(term) != "dumb") run.terminal = terminal;
  }
  for (const std::string& program : workload_programs()) {
    if (vm.count(program)) run.programs[program] = vm[program].as<std::string>();
  }
  return run;
}

int run_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            std::ostream* terminal) {
  po::options_description desc;
  add_plan_options(desc);
  desc.add_options()("out,o", po::value<std::string>(), "The sweep's directory (required)")(
      "only", po::value<std::vector<std::string>>()->composing(),
      "Only these points, by index or tag (repeatable, or comma-separated)")(
      "dry-run", "Print every point's command; run and write nothing")(
      "force", "Rerun points that are already ok")("retry-failed",
                                                   "Rerun points that failed or ran out of memory")(
      "jobs,j", po::value<std::string>()->default_value("1"),
      "Points at once, each on CPUs and GPUs of its own: a number, or auto (as many as fit)")(
      "interleave",
      "Run the repeats in rounds: every point's first repeat, then every point's second, ...")(
      "warmup", po::value<int>()->default_value(0),
      "Runs of each point before any measured repeat, left out of the results")(
      "history", po::value<std::string>(),
      "Then record the sweep's finished points in this history store (bench-history ingest; "
      "docs/history.md)")("history-label", po::value<std::vector<std::string>>()->composing(),
                          "NAME=VALUE on the runs recorded (repeatable)")(
      "orphan-wait", po::value<double>()->default_value(600),
      "Seconds to wait for the processes a killed runner left running a point (they stop after "
      "their step) before reporting it running (orphaned) and going on; 0: no wait");
  add_program_options(desc, "to run (default: the one beside bench-sweep, else PATH's)");
  po::variables_map vm = parse_with_sweep(args, desc);
  if (vm.count("help")) {
    out << kRunHelp;
    print_options(desc, out);
    return kExitOk;
  }
  if (lacks_sweep_or_out("run", vm, err)) return kExitUsage;
  const HistoryHook history =
      history_hook_of(vm.count("history") ? vm["history"].as<std::string>() : "",
                      vm.count("history-label") ? vm["history-label"].as<std::vector<std::string>>()
                                                : std::vector<std::string>{});
  SweepSpec spec = load_sweep_file(vm["sweep"].as<std::string>());
  Plan plan = plan_sweep(spec, plan_options_of(vm));
  warn_unused_references(plan, err);

  RunOptions run = run_options_of(vm, terminal);
  run.prune_after_oom = spec.prune_after_oom;
  // A bad --only is an error before anything is written. A job array's task checks and writes
  // its own points' config files only: N tasks reading every point's would read N x N.
  std::set<std::string> selected;
  for (const SweepPoint* p : points_to_run(plan, run.only)) selected.insert(p->tag);
  if (!run.dry_run) {
    write_plan_locked(plan, run.out_dir, out, in_slurm_array_task() ? &selected : nullptr);
  }
  RunReport report = run_sweep(plan, run, LaunchSite::detect(), out);
  // An array task leaves the store alone: `submit --history` ingests once after the arrays.
  if (history.wanted() && !run.dry_run && report.stop_signal == 0 && !in_slurm_array_task()) {
    out.flush();
    ingest_after_run(run.out_dir, history, err);
  }
  return run_exit_code(report, run.dry_run);
}

// --points-per-job: a number of points, or auto (0).
long points_per_job_of(const std::string& k) {
  if (k == "auto") return 0;
  char* end = nullptr;
  long n = std::strtol(k.c_str(), &end, 10);
  if (k.empty() || *end != '\0' || n < 1 || n > 1'000'000) {
    throw Error::input(Mark::in("--points-per-job " + k), "",
                       "is neither a number of points from 1 to 1000000 nor auto",
                       "--points-per-job 50, or --points-per-job auto");
  }
  return n;
}

// What the jobs' `bench-sweep run` needs to plan the same points: --scenario, --set,
// --max-points and the programs, as given to submit.
std::vector<std::string> run_args_of(const po::variables_map& vm) {
  std::vector<std::string> run_args;
  if (vm.count("scenario")) {
    for (const std::string& name : selectors(vm, "scenario")) {
      run_args.insert(run_args.end(), {"--scenario", name});
    }
  }
  if (vm.count("set")) {
    for (const std::string& kv : vm["set"].as<std::vector<std::string>>()) {
      run_args.insert(run_args.end(), {"--set", kv});
    }
  }
  if (max_points_of(vm) != kDefaultMaxPoints) {
    run_args.insert(run_args.end(), {"--max-points", std::to_string(max_points_of(vm))});
  }
  for (const std::string& program : workload_programs()) {
    if (vm.count(program) == 0) continue;
    run_args.insert(
        run_args.end(),
        {"--" + program, std::filesystem::absolute(vm[program].as<std::string>()).string()});
  }
  return run_args;
}

// `bench-sweep submit`'s options from its command line (all but the sweep's own).
SubmitOptions submit_options_of(const po::variables_map& vm) {
  SubmitOptions submit;
  submit.out_dir = vm["out"].as<std::string>();
  submit.sweep_path = std::filesystem::absolute(vm["sweep"].as<std::string>()).string();
  if (vm.count("only")) submit.only = selectors(vm, "only");
  submit.force = vm.count("force") > 0;
  submit.retry_failed = vm.count("retry-failed") > 0;
  submit.dry_run = vm.count("dry-run") > 0;
  submit.max_parallel = vm["max-parallel"].as<long>();
  submit.history =
      history_hook_of(vm.count("history") ? vm["history"].as<std::string>() : "",
                      vm.count("history-label") ? vm["history-label"].as<std::vector<std::string>>()
                                                : std::vector<std::string>{});
  submit.jobs = parse_jobs(vm["jobs"].as<std::string>());
  submit.points_per_job = points_per_job_of(vm["points-per-job"].as<std::string>());
  std::filesystem::path self = self_path();
  submit.bench_sweep = self.empty() ? "bench-sweep" : self.string();
  submit.run_args = run_args_of(vm);
  return submit;
}

int run_submit(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  add_plan_options(desc);
  desc.add_options()("out,o", po::value<std::string>(), "The sweep's directory (required)")(
      "max-parallel", po::value<long>()->default_value(0),
      "At most K tasks of each array at once (%K); 0 = no limit")(
      "only", po::value<std::vector<std::string>>()->composing(),
      "Only these points, by index or tag (repeatable, or comma-separated)")(
      "dry-run", "Print the batch scripts and sbatch commands; write and submit nothing")(
      "force", "Submit points that are already ok")(
      "retry-failed", "Submit points that failed or ran out of memory")(
      "points-per-job", po::value<std::string>()->default_value("1"),
      "Points each array task runs: a number, or auto (from their measured time and the time "
      "limit)")("jobs,j", po::value<std::string>()->default_value("1"),
                "Points at once in each task (bench-sweep run --jobs): a number, or auto")(
      "history", po::value<std::string>(),
      "Also submit a job after the arrays that records the sweep's finished points in this "
      "history store (docs/history.md)")("history-label",
                                         po::value<std::vector<std::string>>()->composing(),
                                         "NAME=VALUE on the runs recorded (repeatable)");
  add_program_options(desc, "the jobs run");
  po::variables_map vm = parse_with_sweep(args, desc);
  if (vm.count("help")) {
    out << kSubmitHelp;
    print_options(desc, out);
    return kExitOk;
  }
  if (lacks_sweep_or_out("submit", vm, err)) return kExitUsage;
  if (vm["max-parallel"].as<long>() < 0) {
    throw Error::input(Mark::in("--max-parallel"), "", "must be 0 or more");
  }
  SweepSpec spec = load_sweep_file(vm["sweep"].as<std::string>());
  Plan plan = plan_sweep(spec, plan_options_of(vm));
  warn_unused_references(plan, err);
  SubmitOptions submit = submit_options_of(vm);
  points_to_run(plan, submit.only);  // a bad --only is an error before anything is written
  if (!submit.dry_run && !capture_process({"sbatch", "--version"}, 30).started) {
    throw Error::input(Mark::in("sbatch"), "", "not found: this machine cannot submit SLURM jobs",
                       "submit from a login node of the cluster, or run the points here with "
                       "`bench-sweep run`");
  }
  if (!submit.dry_run) write_plan_locked(plan, submit.out_dir, out);
  submit_sweep(plan, submit, out);
  return kExitOk;
}

int run_status(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")("out,o", po::value<std::string>(),
                                                 "The sweep's directory (required)")(
      "format", po::value<std::string>()->default_value("table"), "table or json");
  po::positional_options_description positional;
  positional.add("out", 1);
  po::variables_map vm = parse(args, desc, positional);
  if (vm.count("help")) {
    out << kStatusHelp;
    print_options(desc, out);
    return kExitOk;
  }
  if (!vm.count("out")) {
    err << "bench-sweep status: error: --out DIR is missing\n"
        << "usage: bench-sweep status --out DIR  (bench-sweep status --help)\n";
    return kExitUsage;
  }
  std::string format = vm["format"].as<std::string>();
  if (format != "table" && format != "json") {
    throw Error::input(Mark::in("--format " + format), "", "unknown format '" + format + "'",
                       "use table or json");
  }
  std::string dir = vm["out"].as<std::string>();
  StatusReport report = sweep_status(dir);
  print_status(report, dir, format == "json", out);
  return report.missed_reference() > 0 ? kExitReferenceMissed : kExitOk;
}

std::string default_text(const KeySpec& k) {
  if (k.derived) return "derived";
  return display_value(k.default_value);
}

int run_keys(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")(
      "format", po::value<std::string>()->default_value("table"), "table or md");
  po::variables_map vm = parse(args, desc, po::positional_options_description());
  if (vm.count("help")) {
    out << kKeysHelp;
    print_options(desc, out);
    return kExitOk;
  }
  TableFormat format = parse_table_format(vm["format"].as<std::string>(),
                                          {TableFormat::kText, TableFormat::kMarkdown});
  if (format == TableFormat::kMarkdown) {
    out << schema_markdown();
    return kExitOk;
  }
  // A listing, two lines a key: the choices and descriptions are too wide for table columns.
  size_t width = 0;
  for (const KeySpec& k : Schema::get().keys()) width = std::max(width, k.path.size());
  for (const KeySpec& k : Schema::get().keys()) {
    out << k.path << std::string(width - k.path.size() + 2, ' ') << k.type_text() << "; default "
        << default_text(k) << (k.hashed ? "" : "; not hashed") << "\n"
        << std::string(width + 2, ' ') << k.description << "\n";
  }
  return kExitOk;
}

void report(const Error& e, std::ostream& err) { err << error_line(e, "bench-sweep") << "\n"; }

}  // namespace

std::string schema_markdown() {
  std::ostringstream out;
  std::optional<std::string> section;  // nullopt before the first key
  std::optional<TableWriter> table;    // one Markdown table per section (config/table.h)
  for (const KeySpec& k : Schema::get().keys()) {
    if (k.section() != section) {
      if (table) table->finish();
      section = k.section();
      out << "\n### " << (section->empty() ? "Top level" : "`" + *section + "`") << "\n\n";
      table.emplace(std::vector<std::string>{"key", "type", "default", "hashed", "description"},
                    TableFormat::kMarkdown, out);
    }
    // As canonical_config_text decides: an unhashed key never enters config_hash, whatever
    // the benchmark (serve.host); one of a section some workloads read, only for those.
    std::string hashed = k.hashed_unless_default ? "unless default" : k.hashed ? "yes" : "no";
    if (hashed != "no" && !k.only_for_benchmarks.empty()) {
      std::string only = "for " + join(k.only_for_benchmarks, ", ") + " only";
      hashed = hashed == "yes" ? only : only + ", " + hashed;
    }
    table->row({Value::string("`" + k.path + "`"), Value::string(k.type_text()),
                Value::string("`" + default_text(k) + "`"), Value::string(hashed),
                Value::string(k.description)});
  }
  if (table) table->finish();
  return out.str();
}

int bench_sweep_main(const std::vector<std::string>& args, std::ostream& raw_out,
                     std::ostream& raw_err) {
  // Messages and run's and submit's reports are for people: what values, tags, reasons and
  // programs' words they hold reaches the terminal escaped (text/terminal.h). Tables escape
  // their own cells; JSON and CSV stay exact.
  TerminalSafeStream err(raw_err);
  TerminalSafeStream people_out(raw_out);
  std::ostream& out = raw_out;
  if (args.empty()) {
    err << kUsage;
    return kExitUsage;
  }
  const std::string& command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "--help" || command == "-h" || command == "help") {
      out << kUsage;
      return kExitOk;
    }
    if (command == "--version") {
      out << "bench-sweep " << kVersion << "\n";
      return kExitOk;
    }
    if (command == "plan") return run_plan(rest, out, err);
    if (command == "run") return run_run(rest, people_out, err, &raw_out);
    if (command == "submit") return run_submit(rest, people_out, err);
    if (command == "status") return run_status(rest, out, err);
    if (command == "keys") return run_keys(rest, out);
    std::string message = "unknown command '" + command + "'";
    if (auto near = closest_match(command, {"plan", "run", "submit", "status", "keys"})) {
      message += " (did you mean '" + *near + "'?)";
    }
    err << "bench-sweep: error: " << message << "\n" << kUsage;
    return kExitUsage;
  } catch (const Error& e) {
    report(e, err);
    return exit_code_for(e.kind());
  } catch (const po::error& e) {
    err << "bench-sweep " << command << ": error: " << e.what() << "\n"
        << "(bench-sweep " << command << " --help lists the options)\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "bench-sweep: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace sweepbench
