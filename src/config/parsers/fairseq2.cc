// fairseq2's training log (0.3 and 0.8) and, where it wrote them, its metrics JSON lines.
#include "config/parsers/parser.h"

namespace sweepbench {

namespace {

std::vector<MetricSpec> metrics() {
  // Its LogMetricRecorder, through Python's logging (so on either stream): 0.3 prints "Train
  // Metrics (step 20) - Loss: 2.301 | Elements per Second: 12,345 | Elapsed Time: 12s | Wall
  // Time: 1,234s"; 0.8 has "NLL Loss", and for time "Data Time", "Compute Time", "Lapse Time"
  // (each of the interval), "Total Time" and "Wall Time" (so far); a subcategory may follow
  // the step ("(step 20) - sub - ..."). Integers and durations are int() of the figure, with
  // thousands separators, "<1" ("<1s") below one: read as the middle of their interval (N + 0.5);
  // floats print as Python's %g (1.5e-05, nan).
  // Where fairseq2 wrote its JSON lines (metrics/train.jsonl under its output directory: the
  // point directory, or one or two levels below it), those exact figures are read instead.
  // Without --no-rich, rich wraps each line at 80 columns on a pipe: they are joined again.
  auto f2 = [](const std::string& name, const std::string& unit, const std::string& label,
               const std::string& number, MetricReduce reduce, bool required) {
    MetricSpec m;
    m.name = name;
    m.unit = unit;
    m.source = MetricSource::kOutput;
    m.regex = "[Tt]rain Metrics \\(step \\d+\\)(?: - [^|]*?)? - (?:.*\\| )?" + label + ": (" +
              number + ")s?(?: \\||\\s*$)";
    m.reduce = reduce;
    m.required = required;
    m.parser = "fairseq2";
    m.rich_wrapped = true;
    m.integer_part = number.rfind("<1", 0) == 0;  // the integer pattern
    for (const char* file :
         {"metrics/train.jsonl", "*/metrics/train.jsonl", "*/*/metrics/train.jsonl"}) {
      MetricSpec json =
          parser_json_metric("fairseq2", file, name, unit, "/" + label, false, reduce);
      m.preferred.push_back(json);
    }
    return m;
  };
  const std::string integer = "<1|[0-9][0-9,]*",
                    real = "-?[0-9][0-9,]*(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|-?nan|-?inf";
  return {f2("elements_per_second", "elements/s", "Elements per Second", integer,
             MetricReduce::kMean, true),
          f2("elapsed_time", "s", "Elapsed Time", integer, MetricReduce::kSum, false),
          f2("data_time", "s", "Data Time", integer, MetricReduce::kSum, false),
          f2("compute_time", "s", "Compute Time", integer, MetricReduce::kSum, false),
          f2("lapse_time", "s", "Lapse Time", integer, MetricReduce::kSum, false),
          f2("total_time", "s", "Total Time", integer, MetricReduce::kLast, false),
          f2("wall_time", "s", "Wall Time", integer, MetricReduce::kLast, false),
          f2("train_loss", "", "Loss", real, MetricReduce::kLast, false),
          f2("nll_loss", "", "NLL Loss", real, MetricReduce::kLast, false)};
}

}  // namespace

Parser parser_fairseq2() {
  return {"fairseq2", "", metrics,
          "the fairseq2 parser reads its Train Metrics lines, which rich wraps at 80 "
          "columns on a pipe (pass --no-rich), or its metrics/train.jsonl (give it an "
          "output directory under {out})"};
}

}  // namespace sweepbench
