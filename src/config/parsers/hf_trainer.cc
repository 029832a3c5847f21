// The Hugging Face Trainer: the dict it logs at the end of train() and log_metrics' blocks.
#include "config/parsers/parser.h"

namespace sweepbench {

namespace {

// A number as the Trainer prints it (Python's repr; numpy's in 4.x's later releases; a quoted
// string of four significant digits in 5.x's final dict, which may group thousands: '1,234.5',
// read as 1234.5 as every other metric reads it), ending where the dict entry or the line ends
// (so "0:00:12.34", log_metrics' runtime, is no number).
const char* const kPyNumber =
    R"((?:np\.float\d*\()?'?(-?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|-?[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf)'?\)?\s*(?:[,}]|$))";

// From the dict the Trainer logs at the end of train(): {'train_runtime': 12.3, ...}.
MetricSpec hf_dict_metric(const std::string& name, const std::string& unit) {
  MetricSpec m;
  m.name = name;
  m.unit = unit;
  m.regex = "'" + name + "': " + kPyNumber;
  m.parser = "hf-trainer";
  return m;
}

// From log_metrics("eval", ...)'s block, as run_clm.py prints it: "  eval_loss   =   2.1234".
MetricSpec hf_block_metric(const std::string& name, const std::string& unit) {
  MetricSpec m;
  m.name = name;
  m.unit = unit;
  m.regex = R"(^\s*)" + name + R"(\s*=\s*)" + kPyNumber;
  m.required = false;  // only where the program evaluates
  m.parser = "hf-trainer";
  return m;
}

}  // namespace

namespace {

std::vector<MetricSpec> metrics() {
  return {hf_dict_metric("train_runtime", "s"),
          hf_dict_metric("train_samples_per_second", "samples/s"),
          hf_dict_metric("train_steps_per_second", "steps/s"),
          hf_dict_metric("train_loss", ""),
          hf_block_metric("eval_loss", ""),
          hf_block_metric("eval_samples_per_second", "samples/s"),
          hf_block_metric("eval_steps_per_second", "steps/s"),
          hf_block_metric("perplexity", "")};
}

}  // namespace

Parser parser_hf_trainer() { return {"hf-trainer", "the Hugging Face Trainer", metrics, ""}; }

}  // namespace sweepbench
