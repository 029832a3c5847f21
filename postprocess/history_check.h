// bench-history check: the changes in the store's series (docs/history.md, "Finding changes"). A
// series is one configuration's metric over its ok runs in the order they started (the series
// key: the config without container.* and launch.setup, so another image continues it);
// metrics/change_points.h finds its cuts, Benjamini-Hochberg over every test of the check keeps
// false alarms at --fdr, and each change found is attributed: the environment fields and labels
// that changed between the runs on either side of it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "postprocess/compare.h"
#include "postprocess/history_store.h"

namespace sweepbench {

struct CheckOptions {
  // Empty: every metric with an interval in one of the series' runs (the headline ones), and a
  // command's declared metrics.
  std::vector<std::string> metrics;
  double fdr = 0.05;
  size_t min_runs = 3;  // runs on each side of a searched cut
  std::vector<FailOn> fail_on;
};

struct HistoryChange {
  std::string metric, unit, sweep, tag, config_hash;
  std::string since;  // when the first run after the cut started
  double before = 0, after = 0;
  double change = 0, low = 0, high = 0, p = 1;
  bool worse = false;   // in the metric's bad direction (metrics/summary.h)
  bool latest = false;  // the series' last cut: its level now
  size_t runs_before = 0, runs_after = 0;
  // Where: the series (CheckResult::series_views) and its first run after the cut.
  size_t series = 0, at = 0;
  std::string environment;  // "torch_version 2.14.0 -> 2.15.0; ..." or ""
  std::string labels;       // "commit abc -> def" or ""
  // For people: "train_tokens_per_second -7.2% [-8.9%, -5.4%] since 2026-11-20, when
  // torch_version went from 2.14.0 to 2.15.0".
  std::string what() const;
};

// One series as the check read it (for the report's figures): its ok runs in order, each with
// its value of the metric. Pointers into the runs given to check_history.
struct HistorySeriesView {
  std::string metric, unit;
  std::vector<const HistoryRun*> runs;
  std::vector<const HistoryMetric*> values;
  std::vector<size_t> changes;  // indices into CheckResult::changes, in time order
};

struct CheckResult {
  std::vector<HistoryChange> changes;  // the discoveries, worst first
  std::vector<HistorySeriesView> series_views;  // every series checked
  size_t series = 0, runs = 0, tests = 0;
};

// A change as people read it: "+7.2%", "-12.0%".
std::string signed_percent(double fraction);

// "FIELD A -> B; ..." for the fields whose values differ between two environments (or label
// sets), "(none)" where one lacks a field; "" when they agree.
std::string field_differences(const std::map<std::string, std::string>& a,
                              const std::map<std::string, std::string>& b);

// `runs`: the store's runs (HistoryStore::runs, every metric), any order; they must outlive the
// result's series_views.
CheckResult check_history(const std::vector<HistoryRun>& runs, const CheckOptions& options);

// 8 when a --fail-on metric's latest change is a discovery, worse beyond its threshold; else 0.
int check_exit_code(const CheckResult& result, const std::vector<FailOn>& fail_on);

}  // namespace sweepbench
