// The load metrics of a serve point (docs/serving.md, "Load metrics"): each request's TTFT, TPOT,
// inter-token latencies and end-to-end latency from its timings, and a point's percentiles,
// throughputs, goodput under an SLA and errors by kind. Pure: the timings come from the load
// generator (not written yet: issue 54), or from a test.
//
// Definitions, as vLLM's `vllm bench serve` has them (its documented metrics) unless a line
// says "vLLM:":
//
//   token chunk   a streamed chunk that carried at least one output token. A chunk with none
//                 (the chat answer's first, role-only delta; the usage chunk) times nothing.
//                 vLLM: every chunk with a non-empty `choices` counts, so a chat answer's TTFT
//                 ends at the role-only delta, usually sent at once before the first token.
//   TTFT          first token chunk's arrival - send time.
//   E2E latency   end - send, where end is when the last token chunk arrived (the usage chunk
//                 and [DONE] after it do not count), as vLLM's `latency`.
//   output tokens the server's usage.completion_tokens when it sent one, else the sum of the
//                 chunks' token counts. vLLM: else the text re-tokenised with the model's
//                 tokenizer (we have none in the client).
//   TPOT          (E2E - TTFT) / (output tokens - 1): the mean time per token after the first,
//                 the first token excluded; undefined (NaN, left out of TPOT's percentiles) for
//                 fewer than 2 output tokens.
//   ITL           the gaps between successive token chunks of a request, one per gap (a chunk of
//                 k tokens is one gap, not k); a point's ITL percentiles pool every request's.
//   percentiles   p50, p90, p95, p99 of the successful requests' values, by linear
//                 interpolation between order statistics (Hyndman and Fan's type 7, numpy's and
//                 so vLLM's np.percentile default; metrics/summary.h's percentile): for n sorted
//                 values x[0..n-1], h = q (n - 1), P(q) = x[floor h] + (h - floor h)
//                 (x[floor h + 1] - x[floor h]). p50 of {1..10} is 5.5, p90 9.1, p99 9.91.
//   duration      the load's wall time, from its start to the last answer's end (the caller's
//                 clock, as vLLM's benchmark_duration); load_duration() gives first send to last
//                 end when there is no better figure.
//   request throughput   successful requests / duration.
//   output tokens/s      output tokens of the successful requests / duration.
//   total tokens/s       (prompt + output tokens) of the successful requests / duration; NaN
//                        when a successful request's prompt tokens are unknown.
//   tokens/s per user    output tokens / the sum of E2E latencies over the successful requests:
//                        output tokens/s divided by the mean number of requests in flight
//                        (Little's law). vLLM's plot_pareto divides output tokens/s by the
//                        configured concurrency (or the request rate when there is none);
//                        InferenceMAX's interactivity is 1 / TPOT. At a fixed concurrency
//                        that is always busy ours equals vLLM's.
//   goodput       successful requests meeting every bound of the SLA (TTFT <= ttft_s, TPOT <=
//                 tpot_s, E2E <= e2e_s; a bound left infinite always holds; a request with
//                 fewer than 2 output tokens meets any TPOT bound, as vLLM counts its TPOT 0)
//                 per second of the duration: vLLM's request_goodput (--goodput).
//   errors        every request that did not succeed, counted by kind; a request without any
//                 token chunk and no other error is kNoOutput (vLLM: "Never received a valid
//                 chunk to calculate TTFT", a failure).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace sweepbench::serve {

// Why a request failed.
enum class RequestError {
  kNone,
  kConnect,     // no connection, or it was reset before an answer
  kHttpStatus,  // an answer other than 200
  kTimeout,     // no answer, or no end of it, in time
  kStream,      // the body was no readable event stream (serve/sse.h's StreamError)
  kServer,      // the stream carried the server's error object
  kNoOutput,    // the stream ended without any token chunk
};
inline constexpr size_t kRequestErrorKinds = 7;
// "none", "connect", "http-status", "timeout", "stream", "server", "no-output".
const char* to_string(RequestError error);

struct TokenChunk {
  double time_s = 0;        // when it arrived (the client's monotonic clock, any origin)
  std::int64_t tokens = 0;  // output tokens it carried
};

// What the client recorded of one request. Times share one clock.
struct RequestTiming {
  double send_s = 0;                // when the request was sent
  std::vector<TokenChunk> chunks;   // in arrival order
  double end_s = 0;                 // when the last token chunk arrived (see E2E above)
  std::int64_t prompt_tokens = -1;  // usage.prompt_tokens; -1: unknown
  std::int64_t output_tokens = -1;  // usage.completion_tokens; -1: the chunks' sum
  RequestError error = RequestError::kNone;
};

struct RequestMetrics {
  bool ok = false;                           // no error and at least one token chunk
  RequestError error = RequestError::kNone;  // kNoOutput when it failed for want of tokens
  double ttft_s = std::numeric_limits<double>::quiet_NaN();
  double e2e_s = std::numeric_limits<double>::quiet_NaN();
  double tpot_s = std::numeric_limits<double>::quiet_NaN();  // NaN below 2 output tokens
  std::vector<double> itl_s;
  std::int64_t output_tokens = 0;
  std::int64_t prompt_tokens = -1;
};

// One request's metrics. Throws std::invalid_argument when the timing contradicts itself (a
// chunk before the send or out of order, an end before the last chunk, negative tokens): a bug
// in the client, not a property of the server.
RequestMetrics request_metrics(const RequestTiming& timing);

struct Percentiles {
  size_t count = 0;  // values they are of
  double mean = std::numeric_limits<double>::quiet_NaN();
  double p50 = std::numeric_limits<double>::quiet_NaN();
  double p90 = std::numeric_limits<double>::quiet_NaN();
  double p95 = std::numeric_limits<double>::quiet_NaN();
  double p99 = std::numeric_limits<double>::quiet_NaN();
};
// Type 7 percentiles (above) and the mean; NaN for no values.
Percentiles percentiles_of(std::vector<double> values);

// The latency bounds a good request meets (seconds); infinity: no bound.
struct Sla {
  double ttft_s = std::numeric_limits<double>::infinity();
  double tpot_s = std::numeric_limits<double>::infinity();
  double e2e_s = std::numeric_limits<double>::infinity();
};
bool meets_sla(const RequestMetrics& request, const Sla& sla);

struct PointMetrics {
  size_t requests = 0, succeeded = 0, failed = 0, good = 0;
  std::array<size_t, kRequestErrorKinds> errors{};  // by RequestError; errors[kNone] is 0
  Percentiles ttft_s, tpot_s, itl_s, e2e_s;
  double duration_s = 0;
  std::int64_t output_tokens = 0;  // of the successful requests
  double request_throughput = 0;   // requests/s
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;
  double tokens_per_s_per_user = 0;
  double goodput = 0;  // good requests/s
};

// A point's metrics over its requests, for a load that lasted `duration_s` (> 0; else the rates
// are NaN). Throws std::invalid_argument as request_metrics.
PointMetrics point_metrics(const std::vector<RequestTiming>& requests, double duration_s,
                           const Sla& sla = {});

// The first send to the last end (or send, for a request that failed before any answer); 0 for
// no requests.
double load_duration(const std::vector<RequestTiming>& requests);

}  // namespace sweepbench::serve
