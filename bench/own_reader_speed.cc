// Whether our direct reader of the files we write (parse_own_yaml, src/config/own_yaml.cc) still
// earns its place beside the libraries (issue 56, deliver 6): the same documents read by it, by
// nlohmann::json (the JSON library bench-command and bench-history use: its DOM alone, and its
// DOM turned into our Value, which is what every caller needs, by bench-history's
// parse_json_value) and by yaml-cpp (parse_yaml, what the direct reader falls back to). The table
// in docs/performance.md ("Reading our own files").
//
//   build/release/bin/own_reader_speed [--rounds 5] [--json FILE]
//
// The documents are what bench-sweep and the benchmarks write, made here by our own emitter
// (emit_json, emit_canonical_yaml) with realistic shapes: a status.json (16 keys), a summary.json
// (90 keys, lists of 200 step times), a manifest.json of 10,000 points and a config.yaml
// (canonical YAML: nlohmann::json reads no YAML, so only ours and yaml-cpp). Each round times
// every reader on every document, in turn (the readers' order rotates from round to round, so a
// drift of the machine falls on all alike), for at least 0.2 s each; the median over the rounds
// is reported, every round beside it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/value.h"
#include "config/yaml_io.h"
#include "metrics/statistics.h"
#include "os/fs.h"
#include "postprocess/history_mlflow.h"

namespace {

using sweepbench::Value;

Value status_doc() {
  Value v = Value::map();
  v.set("status", Value::string("ok"));
  v.set("attempt", Value::integer(1));
  v.set("exit_code", Value::integer(0));
  v.set("reason", Value::string(""));
  v.set("started", Value::string("2026-11-30T19:06:22Z"));
  v.set("ended", Value::string("2026-11-30T19:07:02Z"));
  v.set("seconds", Value::real(40.125));
  v.set("host", Value::string("n1"));
  v.set("launcher", Value::string("mpirun"));
  v.set("ranks", Value::integer(2));
  v.set("slurm_job", Value::null());
  v.set("container", Value::null());
  v.set("config_hash",
        Value::string("3f1c9a2b7d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e"));
  v.set("tag", Value::string("gpt2-tiny_mb8_seq512_bf16"));
  Value beside = Value::list();
  beside.items().push_back(Value::string("gpt2-tiny_mb4_seq512_bf16"));
  v.set("beside", beside);
  v.set("requeued", Value::boolean(false));
  return v;
}

Value summary_doc() {
  Value v = Value::map();
  v.set("status", Value::string("ok"));
  Value metrics = Value::map();
  for (int i = 0; i < 60; ++i) {
    metrics.set("metric_" + std::to_string(i), Value::real(1234.5678 + i * 0.37));
  }
  v.set("metrics", metrics);
  Value steps = Value::list();
  Value tokens = Value::list();
  for (int i = 0; i < 200; ++i) {
    steps.items().push_back(Value::real(0.0831 + (i % 7) * 0.0013));
    tokens.items().push_back(Value::integer(8192));
  }
  v.set("step_times_s", steps);
  v.set("tokens", tokens);
  Value env = Value::map();
  for (int i = 0; i < 25; ++i)
    env.set("env_" + std::to_string(i), Value::string("value " + std::to_string(i)));
  v.set("environment", env);
  return v;
}

Value manifest_doc() {
  Value v = Value::map();
  v.set("name", Value::string("zero-grid"));
  v.set("version", Value::integer(3));
  Value points = Value::list();
  for (int i = 0; i < 10000; ++i) {
    Value p = Value::map();
    p.set("index", Value::integer(i));
    p.set("tag", Value::string("gpt2-small_mb" + std::to_string(1 << (i % 6)) + "_seq" +
                               std::to_string(128 << (i % 4)) + "_r" + std::to_string(i)));
    p.set("config_hash", Value::string("3f1c9a2b7d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f50617283"));
    p.set("status", Value::string(i % 10 == 0 ? "oom" : "ok"));
    p.set("repeat", Value::integer(i % 3));
    p.set("slurm_job", Value::null());
    p.set("predicted_peak_bytes", Value::integer(17179869184LL + i));
    p.set("predicted_step_s", Value::real(0.25 + i * 1e-5));
    points.items().push_back(p);
  }
  v.set("points", points);
  return v;
}

Value config_doc() {
  Value v = Value::map();
  const char* sections[] = {"model", "data", "train", "eval", "launch", "metrics", "container"};
  int k = 0;
  for (const char* s : sections) {
    Value sec = Value::map();
    for (int i = 0; i < 12; ++i, ++k) {
      std::string key = "key_" + std::to_string(i);
      if (k % 3 == 0)
        sec.set(key, Value::integer(k * 8));
      else if (k % 3 == 1)
        sec.set(key, Value::real(k * 1e-4));
      else
        sec.set(key, Value::string("name" + std::to_string(k)));
    }
    v.set(s, sec);
  }
  return v;
}

// What each read gives is kept, so that no read is optimised away.
volatile size_t kept = 0;
void keep(size_t n) { kept = kept + n; }

// Seconds per read: repeats until 0.2 s have passed.
double per_read(const std::function<void()>& read) {
  using clock = std::chrono::steady_clock;
  read();  // warm: first-touch allocations
  long n = 0;
  auto start = clock::now();
  double elapsed = 0;
  do {
    read();
    ++n;
    elapsed = std::chrono::duration<double>(clock::now() - start).count();
  } while (elapsed < 0.2);
  return elapsed / static_cast<double>(n);
}

double median(const std::vector<double>& v) { return sweepbench::percentile(v, 0.5); }

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--json" && i + 1 < argc) {
      json_out = argv[++i];
    } else {
      std::fprintf(stderr, "usage: own_reader_speed [--rounds N] [--json FILE]\n");
      return 2;
    }
  }
  struct Doc {
    std::string name, text;
    bool is_json;
  };
  std::vector<Doc> docs = {
      {"status.json", sweepbench::emit_json(status_doc()), true},
      {"summary.json", sweepbench::emit_json(summary_doc()), true},
      {"manifest.json (10,000 points)", sweepbench::emit_json(manifest_doc()), true},
      {"config.yaml (canonical)", sweepbench::emit_canonical_yaml(config_doc()), false},
  };
  struct Reader {
    std::string name;
    bool json_only;
    std::function<void(const std::string&)> read;
  };
  std::vector<Reader> readers = {
      {"ours (parse_own_yaml)", false,
       [](const std::string& t) { keep(sweepbench::parse_own_yaml(t, "doc").entries().size()); }},
      {"nlohmann::json, its DOM", true,
       [](const std::string& t) { keep(nlohmann::json::parse(t).size()); }},
      {"nlohmann::json, as a Value", true,
       [](const std::string& t) { keep(sweepbench::parse_json_value(t, "doc").entries().size()); }},
      {"yaml-cpp (parse_yaml)", false,
       [](const std::string& t) { keep(sweepbench::parse_yaml(t, "doc").entries().size()); }},
  };
  // Each reader gives the same Value as ours on every document it reads.
  for (const Doc& d : docs) {
    Value ours = sweepbench::parse_own_yaml(d.text, "doc");
    if (ours != sweepbench::parse_yaml(d.text, "doc") ||
        (d.is_json && ours != sweepbench::parse_json_value(d.text, "doc"))) {
      std::fprintf(stderr, "own_reader_speed: the readers disagree on %s\n", d.name.c_str());
      return 1;
    }
  }
  // seconds[doc][reader][round]
  std::vector<std::vector<std::vector<double>>> seconds(
      docs.size(), std::vector<std::vector<double>>(readers.size()));
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < readers.size(); ++k) {
      size_t ri = (k + static_cast<size_t>(r)) % readers.size();
      for (size_t di = 0; di < docs.size(); ++di) {
        if (readers[ri].json_only && !docs[di].is_json) continue;
        const std::string& text = docs[di].text;
        seconds[di][ri].push_back(per_read([&] { readers[ri].read(text); }));
      }
    }
  }
  Value rows = Value::list();
  std::printf("%-32s %-28s %12s %9s  rounds (us)\n", "document", "reader", "median us", "vs ours");
  for (size_t di = 0; di < docs.size(); ++di) {
    double ours = median(seconds[di][0]);
    for (size_t ri = 0; ri < readers.size(); ++ri) {
      if (seconds[di][ri].empty()) continue;
      double m = median(seconds[di][ri]);
      std::string each;
      for (double s : seconds[di][ri]) each += " " + std::to_string(s * 1e6).substr(0, 8);
      std::printf("%-32s %-28s %12.1f %8.2fx %s\n", docs[di].name.c_str(), readers[ri].name.c_str(),
                  m * 1e6, m / ours, each.c_str());
      Value row = Value::map();
      row.set("document", Value::string(docs[di].name));
      row.set("bytes", Value::integer(static_cast<std::int64_t>(docs[di].text.size())));
      row.set("reader", Value::string(readers[ri].name));
      row.set("median_us", Value::real(m * 1e6));
      rows.items().push_back(std::move(row));
    }
  }
  if (!json_out.empty()) {
    try {
      sweepbench::write_file_atomic(json_out, sweepbench::emit_json(rows) + "\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "own_reader_speed: cannot write %s: %s\n", json_out.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}
