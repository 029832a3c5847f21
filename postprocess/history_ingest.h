// bench-history ingest: results trees into the history store (docs/history.md).
//
// Each point directory's status.json, and each earlier attempt's under attempts/N/, is one
// finished attempt; its run key (history_store.h) is computed from that file alone, so the store
// is asked first which attempts it has, and only the new ones are read: their summary.json
// (rank 0's metrics, units and environment) and the point's config.yaml, never a rank file, so
// an ingest reads kilobytes a point (bench-extract's rows cost HDF5 a millisecond a point). The
// status is the runner's (status.json). What the runner writes is the spool: a
// status.json is written whole under a temporary name and renamed once the point has ended, so
// an attempt is either finished and complete on disk or not there yet; a point still pending or
// running (no status.json, or one that says so) is left for a later ingest. The runs of a tree go
// into the store in transactions of a few hundred: an ingest killed at any moment has stored
// whole runs only, and the next one adds the rest. Nothing in the results tree is changed, so
// tasks on many nodes can finish beside an ingest, and the same tree can go into several stores.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "postprocess/history_store.h"

namespace sweepbench {

struct IngestOptions {
  std::map<std::string, std::string> labels;  // --label NAME=VALUE, on every run stored
  size_t batch = 2000;                        // runs per transaction
};

struct IngestReport {
  size_t attempts = 0;    // finished attempts found
  size_t added = 0;       // new to the store
  size_t known = 0;       // the store had them already
  size_t unfinished = 0;  // points still pending or running: a later ingest takes them
  // Attempts whose status.json, summary.json or config.yaml is there but cannot be read (cut
  // short, a link, a FIFO): not stored; a later ingest takes them once the files are whole.
  size_t left_out = 0;
  std::vector<std::string> warnings;
};

IngestReport ingest_results(HistoryStore& store, const std::vector<std::string>& paths,
                            const IngestOptions& options,
                            const std::function<void(const std::string&)>& warning = {});

// Checks a --label NAME=VALUE (NAME: letters, digits, _ . -; VALUE: printable, no newline) and
// adds it to `labels`; Error(kInput) naming --label otherwise.
void add_label(const std::string& text, std::map<std::string, std::string>* labels);

}  // namespace sweepbench
