// The load client of a serve point: OpenAI-compatible streaming requests (/v1/completions,
// /v1/chat/completions) sent at a fixed concurrency or at a schedule's send times, each answer
// read by its own SseParser and timed into a RequestTiming for point_metrics()
// (request_metrics.h, docs/serving.md "The load client").
//
// HTTP is libcurl's multi interface: one thread, one event loop, every transfer in flight at
// once (chunked HTTP/1.1 streaming, connections reused between requests). libcurl is in Debian
// and already a dependency of the project (bench-history's MLflow export).
//
// Left out: prompts themselves (the caller gives their text), tokenisation (output tokens are the
// server's usage, else one per chunk that carried text), TLS options beyond libcurl's defaults,
// authentication headers, retries (a failed request is a result, not retried).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/value.h"
#include "serve/request_metrics.h"

namespace sweepbench::serve {

struct LoadTarget {
  std::string base_url;                      // http://host:port (no trailing path)
  std::string endpoint = "/v1/completions";  // or /v1/chat/completions (a chat of one user turn)
  std::string model;
  // Fields added to every request's JSON body (temperature, ignore_eos, ...); a map or null.
  Value extra_body;
};

struct LoadRequest {
  std::string prompt;  // any text: it is escaped as a JSON string
  std::int64_t max_tokens = 16;
  // Or the prompt as token ids, sent as "prompt": [ids] (/v1/completions only: a chat message
  // is text). The server then sees exactly these tokens, whatever its tokenizer would make of a
  // text; `prompt` must be empty.
  std::vector<std::int64_t> prompt_token_ids{};  // {}: {text, max_tokens} stays warning-free
};

struct LoadOptions {
  double request_timeout_s = 600;  // from the request's send to the end of its answer
  double connect_timeout_s = 10;
  // Asked at least every 100 ms: true ends the load at once (bench-serve's stop signals). What is
  // in flight then is recorded as failed (kConnect, "stopped"), and nothing more is sent.
  std::function<bool()> stop;
};

// What the client saw of one request beyond its timing.
struct RequestRecord {
  RequestTiming timing;   // times in seconds from the load's start (steady_clock)
  std::string message;    // why it failed ("" when it did not)
  long http_status = 0;   // the answer's status; 0 when none came
  std::string text;       // the streamed output text, concatenated
  double finished_s = 0;  // when the transfer ended (done, failed or timed out)
};

struct LoadResult {
  std::vector<RequestRecord> requests;  // in the order of the requests given
  double duration_s = 0;                // the load's start to its last request's end
  int max_in_flight = 0;                // the most requests in flight at once (client side)
  size_t sent = 0;                      // requests sent: the first `sent` (fewer when stopped)
  bool stopped = false;                 // LoadOptions::stop ended it
};

// One GET, for a server's health endpoint and model list: its status (0 when no answer came) and
// body (at most 1 MiB kept), or why there was none.
struct HttpAnswer {
  long status = 0;
  std::string body;
  std::string error;
};
HttpAnswer http_get(const std::string& url, double timeout_s);

// A closed loop: `concurrency` requests in flight, each end starts the next, in order.
// Throws std::invalid_argument for concurrency < 1, a target whose URL or endpoint is empty, or
// a request request_body() refuses, before anything is sent; a request that fails is recorded,
// never thrown.
LoadResult run_at_concurrency(const LoadTarget& target, const std::vector<LoadRequest>& requests,
                              int concurrency, const LoadOptions& options = {});

// An open loop: request i is sent at send_times_s[i] seconds after the load's start (arrivals.h's
// send_times), whatever is in flight. Needs as many send times as requests, increasing.
LoadResult run_at_times(const LoadTarget& target, const std::vector<LoadRequest>& requests,
                        const std::vector<double>& send_times_s, const LoadOptions& options = {});

// The JSON body of one request (for its tests and for logs): model, prompt (the text, or the
// token ids as a list of integers) or messages, the request's max_tokens, stream with usage,
// then target.extra_body's fields. Throws std::invalid_argument for token ids to a chat
// endpoint, or both token ids and text.
std::string request_body(const LoadTarget& target, const LoadRequest& request);

// The timings alone, for point_metrics().
std::vector<RequestTiming> timings_of(const LoadResult& result);

}  // namespace sweepbench::serve
