// serve/request_metrics.h: the formulas of its header comment.
#include "serve/request_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "metrics/summary.h"

namespace sweepbench::serve {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_timing(const RequestTiming& t) {
  auto bad = [](const std::string& what) {
    throw std::invalid_argument("request timing: " + what);
  };
  if (!std::isfinite(t.send_s)) bad("the send time is not finite");
  double last = t.send_s;
  for (size_t i = 0; i < t.chunks.size(); ++i) {
    const TokenChunk& c = t.chunks[i];
    if (!std::isfinite(c.time_s) || c.time_s < last) {
      bad("chunk " + std::to_string(i) + " arrived at " + std::to_string(c.time_s) + ", before " +
          (i == 0 ? "the send" : "the chunk before it"));
    }
    if (c.tokens < 0) bad("chunk " + std::to_string(i) + " has a negative token count");
    last = c.time_s;
  }
  if (t.output_tokens < -1 || t.prompt_tokens < -1) bad("a negative token count");
}

}  // namespace

const char* to_string(RequestError error) {
  switch (error) {
    case RequestError::kNone:
      return "none";
    case RequestError::kConnect:
      return "connect";
    case RequestError::kHttpStatus:
      return "http-status";
    case RequestError::kTimeout:
      return "timeout";
    case RequestError::kStream:
      return "stream";
    case RequestError::kServer:
      return "server";
    case RequestError::kNoOutput:
      return "no-output";
  }
  return "unknown";
}

RequestMetrics request_metrics(const RequestTiming& timing) {
  check_timing(timing);
  RequestMetrics m;
  m.prompt_tokens = timing.prompt_tokens;
  std::int64_t chunk_tokens = 0;
  double first = kNaN, previous = kNaN;
  for (const TokenChunk& c : timing.chunks) {
    if (c.tokens == 0) continue;  // no token: times nothing
    chunk_tokens += c.tokens;
    if (std::isnan(first)) {
      first = c.time_s;
    } else {
      m.itl_s.push_back(c.time_s - previous);
    }
    previous = c.time_s;
  }
  m.output_tokens = timing.output_tokens >= 0 ? timing.output_tokens : chunk_tokens;
  m.error = timing.error;
  if (m.error == RequestError::kNone && std::isnan(first)) m.error = RequestError::kNoOutput;
  m.ok = m.error == RequestError::kNone;
  if (!m.ok) {
    m.itl_s.clear();
    return m;
  }
  if (!std::isfinite(timing.end_s) || timing.end_s < previous) {
    throw std::invalid_argument("request timing: the end (" + std::to_string(timing.end_s) +
                                ") is before the last token chunk (" + std::to_string(previous) +
                                ")");
  }
  m.ttft_s = first - timing.send_s;
  m.e2e_s = timing.end_s - timing.send_s;
  if (m.output_tokens >= 2) {
    m.tpot_s = (m.e2e_s - m.ttft_s) / static_cast<double>(m.output_tokens - 1);
  }
  return m;
}

Percentiles percentiles_of(std::vector<double> values) {
  Percentiles p;
  p.count = values.size();
  if (values.empty()) return p;
  p.mean = mean(values);
  p.p50 = percentile(values, 0.50);
  p.p90 = percentile(values, 0.90);
  p.p95 = percentile(values, 0.95);
  p.p99 = percentile(std::move(values), 0.99);
  return p;
}

bool meets_sla(const RequestMetrics& r, const Sla& sla) {
  if (!r.ok) return false;
  // Fewer than 2 tokens: no TPOT, which meets any bound (vLLM counts it 0).
  bool tpot_ok = std::isnan(r.tpot_s) || r.tpot_s <= sla.tpot_s;
  return r.ttft_s <= sla.ttft_s && tpot_ok && r.e2e_s <= sla.e2e_s;
}

PointMetrics point_metrics(const std::vector<RequestTiming>& requests, double duration_s,
                           const Sla& sla) {
  PointMetrics p;
  p.requests = requests.size();
  p.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  double prompt_tokens = 0, e2e_sum = 0;
  bool prompt_known = true;
  for (const RequestTiming& t : requests) {
    RequestMetrics r = request_metrics(t);
    if (!r.ok) {
      ++p.failed;
      ++p.errors[static_cast<size_t>(r.error)];
      continue;
    }
    ++p.succeeded;
    if (meets_sla(r, sla)) ++p.good;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    e2e_sum += r.e2e_s;
    if (!std::isnan(r.tpot_s)) tpot.push_back(r.tpot_s);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    p.output_tokens += r.output_tokens;
    if (r.prompt_tokens < 0) prompt_known = false;
    prompt_tokens += static_cast<double>(std::max<std::int64_t>(r.prompt_tokens, 0));
  }
  p.ttft_s = percentiles_of(std::move(ttft));
  p.tpot_s = percentiles_of(std::move(tpot));
  p.itl_s = percentiles_of(std::move(itl));
  p.e2e_s = percentiles_of(std::move(e2e));
  auto output = static_cast<double>(p.output_tokens);
  bool timed = duration_s > 0 && std::isfinite(duration_s);
  p.request_throughput = timed ? static_cast<double>(p.succeeded) / duration_s : kNaN;
  p.output_tokens_per_s = timed ? output / duration_s : kNaN;
  p.total_tokens_per_s = timed && prompt_known ? (prompt_tokens + output) / duration_s : kNaN;
  p.goodput = timed ? static_cast<double>(p.good) / duration_s : kNaN;
  p.tokens_per_s_per_user = e2e_sum > 0 ? output / e2e_sum : kNaN;
  return p;
}

double load_duration(const std::vector<RequestTiming>& requests) {
  if (requests.empty()) return 0;
  double first = requests.front().send_s, last = requests.front().send_s;
  for (const RequestTiming& t : requests) {
    first = std::min(first, t.send_s);
    last = std::max({last, t.send_s, t.end_s});
    if (!t.chunks.empty()) last = std::max(last, t.chunks.back().time_s);
  }
  return last - first;
}

}  // namespace sweepbench::serve
