// What `bench-sweep run` tells people while it runs: a row a point, lines between them, the live
// progress line on a terminal, and the summary at the end (docs/running.md). The runner decides;
// this file only says.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "layout/point_record.h"
#include "sweep/expand.h"

namespace sweepbench {

// What a run did, for its summary and exit code.
struct RunReport {
  // The selected points' statuses after the run: what this run recorded, else what their
  // status.json says when it ended (a point another runner ran meanwhile).
  std::map<PointStatus, size_t> counts;
  size_t ran = 0;
  size_t busy_elsewhere = 0;  // claimed by another live runner, and still running at the end
  // Points whose directory holds what sweepbench cannot use (a claim that is a FIFO, attempts/
  // linked out of the tree): "DIR/<tag>/.claim: is a FIFO, ...". They did not run; nothing of
  // theirs was touched. The run exits 4 (a file-system error).
  std::vector<std::string> unusable;
  // Skipped by the sweep's memory_limit: asked for, so not a failure of the run (all_ok).
  size_t skipped_by_memory_limit = 0;
  // Repeats skipped because the repeats before them were precise enough (the sweep's repeats
  // until precise): asked for too.
  size_t skipped_as_precise = 0;
  int stop_signal = 0;  // a signal stopped the sweep early
  // The selected ok points whose results missed a performance reference (tags), and how many
  // passed theirs.
  std::vector<std::string> missed_reference;
  size_t passed_reference = 0;
  bool all_ok() const;
};

// "12.3": seconds as a point's row gives them.
std::string seconds_text(double s);

// How far a sweep is, for people: on a terminal one live line at the bottom (done, ok, failed,
// running, elapsed, an estimate of the time left), redrawn every second; in logs, the estimate
// on each point's "running" line. The estimate: the points left (running ones included) at the
// rate points have ended so far; points kept from earlier runs count as done and not in the rate.
class Progress {
 public:
  // `terminal`: where the live line goes (none: no live line).
  explicit Progress(std::ostream* terminal);

  void start(size_t total);
  // A point is done: ran and ended with `status`, or (nullopt) did not run.
  void done(std::optional<PointStatus> status);
  void tick(size_t running);
  // " [3/10 done, 0:32 elapsed, about 1:10 left]" once a point has run; "" before.
  std::string eta_text() const;
  void clear();
  void draw();
  void finish() { clear(); }

 private:
  double elapsed() const;
  double left() const;

  std::ostream& out_;
  bool live_;
  size_t total_ = 0, done_ = 0, ran_ = 0, running_ = 0;
  std::map<PointStatus, size_t> counts_;
  std::chrono::steady_clock::time_point t0_, drawn_;
  bool shown_ = false;
};

// The run's output stream with the progress line kept below it.
class RunOutput {
 public:
  RunOutput(std::ostream& out, std::ostream* terminal) : out_(out), progress_(terminal) {}

  // A point's row: "  INDEX  STATUS  TAG  NOTE".
  void row(const SweepPoint& p, const std::string& status, const std::string& note);
  // A line of output, below the live progress line on a terminal.
  void say(const std::string& text);
  // The last lines: the statuses counted, then what to do next (`n` points selected).
  void summary(RunReport& report, size_t n, const std::string& out_dir, bool dry_run);

  std::ostream& out() { return out_; }
  Progress& progress() { return progress_; }

 private:
  std::ostream& out_;
  Progress progress_;
};

}  // namespace sweepbench
