#include "fuzz/sweep_fuzz_entry.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "config/config.h"
#include "config/yaml_io.h"
#include "sweep/expand.h"
#include "sweep/plan_output.h"
#include "sweep/sweep_spec.h"
#include "sweep/tagger.h"

namespace sweepbench {
namespace {

// Small enough that one input runs in milliseconds.
constexpr size_t kFuzzMaxPoints = 64;

[[noreturn]] void invariant_broken(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

void check_plan(const Plan& plan) {
  std::set<std::string> tags;
  for (const SweepPoint& p : plan.points()) {
    std::string why;
    if (!is_safe_tag(p.tag, &why)) invariant_broken("unsafe tag '" + p.tag + "': " + why);
    if (!tags.insert(p.tag).second) invariant_broken("duplicate tag '" + p.tag + "'");
    if (config_hash(p.config) != p.config_hash) invariant_broken("stale config_hash");
    // The canonical form reads back to the same config.
    std::string text = emit_canonical_yaml(p.config);
    if (!(parse_yaml(text, "canonical") == p.config))
      invariant_broken("canonical form does not round-trip");
  }
  std::ostringstream sink;
  print_plan(plan, PlanFormat::kTable, sink);
  print_plan(plan, PlanFormat::kJson, sink);
  print_plan(plan, PlanFormat::kCsv, sink);
}

}  // namespace

void run_sweep_fuzz_input(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    PlanOptions options;
    options.max_points = kFuzzMaxPoints;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("#set ", 0) == 0) options.overrides.push_back(parse_override(line.substr(5)));
    }
    Value root = parse_yaml(text, "fuzz.yaml");
    // The fuzzer must not read the machine's files: every `defaults` entry fails to load.
    SweepSpec spec =
        parse_sweep(root, "fuzz.yaml", [](const std::string& path, const std::string&) -> Value {
          throw Error::input(Mark::in(path), "", "the fuzzer reads no files");
        });
    if (!spec.scenarios.empty() && spec.named_scenarios)
      options.scenarios = {spec.scenarios.front().name};
    check_plan(plan_sweep(spec, options));
  } catch (const Error&) {
    // Rejected input: the expected outcome for most mutations.
  }
}

}  // namespace sweepbench
