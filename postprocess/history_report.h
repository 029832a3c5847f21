// bench-history report: the store's runs as one self-contained HTML page (docs/history.md, "The
// report"): the changes `check` finds, each series' history as a figure with its changes, the
// levels between them and the environment changes marked, and the runs that did not end ok.
#pragma once

#include <string>
#include <vector>

#include "postprocess/history_check.h"
#include "postprocess/history_store.h"

namespace sweepbench {

struct HistoryReportOptions {
  std::string store;        // the store's name as messages show it (a password as ***)
  std::string filters;      // the filters asked for, as a person reads them ("" for none)
  std::string title;        // "" for "sweepbench history: STORE"
  size_t max_series = 300;  // figures drawn: series with changes first, the newest first
};

struct HistoryReport {
  std::string html;
  size_t series_drawn = 0, series_left_out = 0;
};

// `runs` and `check`: what check_history was given and found.
HistoryReport history_report(const std::vector<HistoryRun>& runs, const CheckResult& check,
                             const CheckOptions& check_options, const HistoryReportOptions& o);

}  // namespace sweepbench
