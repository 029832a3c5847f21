// bench-extract's tables for people: what `--format table` and `md` print unless --columns says
// otherwise (docs/extract.md, "Tables for people"). CSV and JSON are for programs and keep every
// column exactly; this view chooses and formats.
//
// Columns: index, then the keys that vary over the rows (scenario, repeat, sweep and config keys;
// a key that varies exactly as one before it, such as eval.micro_batch following
// train.micro_batch, is left out), then the headline metrics of the workloads present (training:
// throughput, step time, MFU, TFLOPS, peak memory, loss; inference: TTFT, TPOT, output tokens/s,
// MBU, peak memory; commands: their own metrics), then status and reason when a row is not ok.
// A metric column that no row has is left out. Cells: times in s, ms or µs and bytes in KiB, MiB
// or GiB, chosen per column so that its largest value reads between 1 and 1000; ratios in %;
// four significant digits, or with --group-repeats `mean ± std` rounded to the std's second
// digit. Wide cells are cut in the middle with '…'. Leaves out: everything else (--columns all).
#pragma once

#include "postprocess/extract_table.h"

namespace sweepbench {

// The people's view of `full` (its rows as bench-extract made them): cells are strings. `axes`:
// the keys the sweeps vary, in their files' order, shown first when they vary here. `before`:
// the table before --where, --best or --pareto chose rows from it, whose varying keys are shown
// (so that the one best row still says which configuration it is). `chosen_by`: the metrics the
// selection ranked by (--best, --pareto), shown after the headline ones when they are not among
// them (a command's wall time, `seconds`).
ExtractTable people_table(const ExtractTable& full, const std::vector<std::string>& axes = {},
                          const ExtractTable* before = nullptr,
                          const std::vector<std::string>& chosen_by = {});

}  // namespace sweepbench
