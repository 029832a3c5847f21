// The load client over libcurl's multi interface (load_client.h).
#include "serve/load_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "core/text.h"
#include "core/yaml_io.h"
#include "serve/sse.h"

namespace sweepbench::serve {
namespace {

using Clock = std::chrono::steady_clock;

// The first bytes of a non-200 answer kept for its message: enough for a JSON error object.
constexpr size_t kErrorBodyBytes = 512;

// One request in flight: its easy handle, its parser and what it recorded.
struct Transfer {
  size_t index = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  SseParser parser;
  std::vector<SseEvent> events;
  RequestRecord* record = nullptr;
  Clock::time_point start;
  std::string error_body;  // a non-200 answer's first bytes
  bool aborted = false;    // we ended the transfer (a stream or server error)
  bool saw_status = false;
  std::optional<StreamError> stream_error;

  ~Transfer() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (headers != nullptr) curl_slist_free_all(headers);
  }
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void fail(RequestRecord& record, RequestError kind, std::string message) {
  if (record.timing.error != RequestError::kNone) return;  // the first error stands
  record.timing.error = kind;
  record.message = std::move(message);
}

// Takes the parser's events into the record; false once the stream carried an error object.
bool take_events(Transfer& t) {
  RequestRecord& r = *t.record;
  for (const SseEvent& e : t.events) {
    if (e.kind == SseEvent::Kind::kError) {
      std::string what = "the server's error in the stream: " + e.error.message;
      if (!e.error.type.empty()) what += " (type " + e.error.type + ")";
      if (!e.error.code.empty()) what += " (code " + e.error.code + ")";
      fail(r, RequestError::kServer, what);
      t.events.clear();
      return false;
    }
    if (e.kind != SseEvent::Kind::kChunk) continue;
    // A chunk with text is one token unless the usage at the end says otherwise
    // (request_metrics.h: output tokens are usage.completion_tokens when it came).
    if (e.has_choice && !e.text.empty()) {
      r.timing.chunks.push_back({e.time_s, 1});
      r.text += e.text;
    }
    if (e.usage) {
      if (e.usage->prompt_tokens >= 0) r.timing.prompt_tokens = e.usage->prompt_tokens;
      if (e.usage->completion_tokens >= 0) r.timing.output_tokens = e.usage->completion_tokens;
    }
  }
  t.events.clear();
  return true;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  Transfer& t = *static_cast<Transfer*>(user);
  size_t bytes = size * count;
  double now = seconds_since(t.start);
  if (!t.saw_status) {
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.record->http_status);
    t.saw_status = true;
  }
  if (t.record->http_status != 200) {
    size_t keep = std::min(bytes, kErrorBodyBytes - std::min(kErrorBodyBytes, t.error_body.size()));
    t.error_body.append(data, keep);
    return bytes;  // read the rest so that the connection stays usable
  }
  std::optional<StreamError> error = t.parser.feed(std::string_view(data, bytes), now, t.events);
  bool ok = take_events(t);
  if (error) {
    t.stream_error = std::move(error);
    t.aborted = true;
    return 0;  // ends the transfer: CURLE_WRITE_ERROR
  }
  if (!ok) {
    t.aborted = true;
    return 0;
  }
  return bytes;
}

std::string describe_status(long status, const std::string& body) {
  std::string message = "HTTP status " + std::to_string(status);
  if (!body.empty()) message += ": " + valid_utf8(body);
  return message;
}

// Classifies a finished transfer and fills the record's end.
void finish(Transfer& t, CURLcode code) {
  RequestRecord& r = *t.record;
  r.finished_s = seconds_since(t.start);
  if (r.http_status == 0) curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &r.http_status);
  if (t.aborted) {
    if (t.stream_error) {
      fail(r, RequestError::kStream,
           std::string("the answer is no readable event stream (") +
               to_string(t.stream_error->kind) + "): " + t.stream_error->message);
    }
  } else if (code == CURLE_OPERATION_TIMEDOUT) {
    fail(r, RequestError::kTimeout,
         (r.http_status == 0 ? std::string("no answer") : std::string("no end of the answer")) +
             " within the request's time limit: " + curl_easy_strerror(code));
  } else if (code != CURLE_OK && r.http_status == 0) {
    fail(r, RequestError::kConnect, std::string("no answer: ") + curl_easy_strerror(code));
  } else if (r.http_status != 200) {
    fail(r, RequestError::kHttpStatus, describe_status(r.http_status, t.error_body));
  } else if (code != CURLE_OK) {
    fail(r, RequestError::kStream,
         "the stream broke after " + std::to_string(t.parser.bytes_read()) +
             " bytes, before data: [DONE]: " + curl_easy_strerror(code));
  } else {
    std::optional<StreamError> error = t.parser.finish(r.finished_s, t.events);
    take_events(t);
    if (error) {
      fail(r, RequestError::kStream,
           std::string("the answer is no readable event stream (") + to_string(error->kind) +
               "): " + error->message);
    } else if (!t.parser.done()) {
      fail(r, RequestError::kStream,
           "the stream ended without data: [DONE] after " + std::to_string(t.parser.bytes_read()) +
               " bytes");
    } else if (r.timing.chunks.empty()) {
      fail(r, RequestError::kNoOutput, "the stream ended without any chunk that carried text");
    }
  }
  r.timing.end_s = r.timing.chunks.empty() ? r.timing.send_s : r.timing.chunks.back().time_s;
}

void check_target(const LoadTarget& target) {
  if (target.base_url.empty()) throw std::invalid_argument("the server's URL is empty");
  if (target.endpoint.empty() || target.endpoint[0] != '/')
    throw std::invalid_argument("the endpoint '" + target.endpoint + "' does not start with /");
  if (!target.extra_body.is_null() && !target.extra_body.is_map())
    throw std::invalid_argument("extra_body is not a map");
}

bool is_chat(const LoadTarget& target) { return target.endpoint.find("chat") != std::string::npos; }

struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};

// The loop both plans share: `due(i, now)` says whether request i may start now (i is the next
// not started), `wait_s(i, now)` how long until it may when it may not yet.
template <typename Due, typename Wait>
LoadResult run_load(const LoadTarget& target, const std::vector<LoadRequest>& requests,
                    const LoadOptions& options, Due due, Wait wait_s) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

  // Every body is written before the load starts: a request request_body() refuses stops the
  // load before anything is sent, and no JSON is written between sends.
  std::vector<std::string> bodies;
  bodies.reserve(requests.size());
  for (const LoadRequest& request : requests) bodies.push_back(request_body(target, request));

  LoadResult result;
  result.requests.resize(requests.size());
  std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
  if (!multi) throw std::runtime_error("libcurl: cannot make a multi handle");
  std::string url = target.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += target.endpoint;

  std::vector<std::unique_ptr<Transfer>> in_flight;
  const Clock::time_point start = Clock::now();
  size_t next = 0;

  auto start_request = [&](size_t i) {
    auto t = std::make_unique<Transfer>();
    t->index = i;
    t->record = &result.requests[i];
    t->start = start;
    t->body = std::move(bodies[i]);
    t->easy = curl_easy_init();
    if (t->easy == nullptr) throw std::runtime_error("libcurl: cannot make an easy handle");
    t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
    t->headers = curl_slist_append(t->headers, "Accept: text/event-stream");
    // No "Expect: 100-continue" wait before a long prompt's body.
    t->headers = curl_slist_append(t->headers, "Expect:");
    CURL* c = t->easy;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, t->body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(std::ceil(options.request_timeout_s * 1000)));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::ceil(options.connect_timeout_s * 1000)));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "sweepbench-serve");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_PRIVATE, t.get());
    t->record->timing.send_s = seconds_since(start);
    curl_multi_add_handle(multi.get(), c);
    in_flight.push_back(std::move(t));
    result.max_in_flight = std::max(result.max_in_flight, static_cast<int>(in_flight.size()));
  };

  while (next < requests.size() || !in_flight.empty()) {
    if (options.stop && options.stop()) {
      // Stopped: what is in flight ends here, failed; nothing more is sent.
      for (auto& t : in_flight) {
        curl_multi_remove_handle(multi.get(), t->easy);
        t->record->finished_s = seconds_since(start);
        RequestTiming& timing = t->record->timing;
        timing.end_s = timing.chunks.empty() ? timing.send_s : timing.chunks.back().time_s;
        fail(*t->record, RequestError::kConnect, "stopped: bench-serve was asked to stop");
      }
      in_flight.clear();
      result.stopped = true;
      break;
    }
    while (next < requests.size() && due(next, seconds_since(start), in_flight.size())) {
      start_request(next++);
    }
    int running = 0;
    curl_multi_perform(multi.get(), &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      CURLcode code = msg->data.result;
      curl_multi_remove_handle(multi.get(), msg->easy_handle);
      finish(*t, code);
      in_flight.erase(std::find_if(in_flight.begin(), in_flight.end(),
                                   [t](const auto& p) { return p.get() == t; }));
    }
    if (next < requests.size() && due(next, seconds_since(start), in_flight.size())) continue;
    // Wait for the sockets, curl's own timers, or the next send time, whichever comes first.
    int timeout_ms = 100;
    if (next < requests.size()) {
      double w = wait_s(next, seconds_since(start));
      timeout_ms = std::clamp(static_cast<int>(std::ceil(w * 1000)), 0, 100);
    }
    if (!in_flight.empty() || timeout_ms > 0) {
      curl_multi_poll(multi.get(), nullptr, 0, timeout_ms, nullptr);
    }
  }
  result.sent = next;
  result.requests.resize(next);
  for (const RequestRecord& r : result.requests)
    result.duration_s = std::max(result.duration_s, r.finished_s);
  return result;
}

}  // namespace

std::string request_body(const LoadTarget& target, const LoadRequest& request) {
  Value body = Value::map();
  body.set("model", Value::string(target.model));
  if (!request.prompt_token_ids.empty()) {
    if (is_chat(target)) {
      throw std::invalid_argument("a prompt of token ids cannot go to the chat endpoint '" +
                                  target.endpoint + "' (its messages are text)");
    }
    if (!request.prompt.empty())
      throw std::invalid_argument("a request has both a prompt text and token ids");
    Value ids = Value::list();
    ids.items().reserve(request.prompt_token_ids.size());
    for (std::int64_t id : request.prompt_token_ids) ids.items().push_back(Value::integer(id));
    body.set("prompt", std::move(ids));
  } else if (is_chat(target)) {
    Value message = Value::map();
    message.set("role", Value::string("user"));
    message.set("content", Value::string(request.prompt));
    Value messages = Value::list();
    messages.items().push_back(std::move(message));
    body.set("messages", std::move(messages));
  } else {
    body.set("prompt", Value::string(request.prompt));
  }
  body.set("max_tokens", Value::integer(request.max_tokens));
  body.set("stream", Value::boolean(true));
  Value stream_options = Value::map();
  stream_options.set("include_usage", Value::boolean(true));
  body.set("stream_options", std::move(stream_options));
  if (target.extra_body.is_map()) {
    for (const Value::Entry& e : target.extra_body.entries()) body.set(e.key, e.value);
  }
  return emit_json(body, -1);
}

LoadResult run_at_concurrency(const LoadTarget& target, const std::vector<LoadRequest>& requests,
                              int concurrency, const LoadOptions& options) {
  check_target(target);
  if (concurrency < 1)
    throw std::invalid_argument("concurrency " + std::to_string(concurrency) + " is below 1");
  auto limit = static_cast<size_t>(concurrency);
  return run_load(
      target, requests, options,
      [limit](size_t, double, size_t in_flight) { return in_flight < limit; },
      [](size_t, double) { return 0.1; });  // a slot opens when a transfer ends: poll wakes
}

LoadResult run_at_times(const LoadTarget& target, const std::vector<LoadRequest>& requests,
                        const std::vector<double>& send_times_s, const LoadOptions& options) {
  check_target(target);
  if (send_times_s.size() != requests.size())
    throw std::invalid_argument(std::to_string(send_times_s.size()) + " send times for " +
                                std::to_string(requests.size()) + " requests");
  for (size_t i = 0; i < send_times_s.size(); ++i) {
    if (!std::isfinite(send_times_s[i]) || send_times_s[i] < 0 ||
        (i > 0 && send_times_s[i] < send_times_s[i - 1]))
      throw std::invalid_argument("send time " + std::to_string(i) +
                                  " is not finite, negative or before the one before it");
  }
  return run_load(
      target, requests, options,
      [&send_times_s](size_t i, double now, size_t) { return now >= send_times_s[i]; },
      [&send_times_s](size_t i, double now) { return send_times_s[i] - now; });
}

namespace {
size_t keep_body(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  size_t bytes = size * count;
  body->append(data, std::min(bytes, (size_t{1} << 20) - std::min(body->size(), size_t{1} << 20)));
  return bytes;
}
}  // namespace

HttpAnswer http_get(const std::string& url, double timeout_s) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpAnswer answer;
  CURL* c = curl_easy_init();
  if (c == nullptr) {
    answer.error = "libcurl: cannot make an easy handle";
    return answer;
  }
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(std::ceil(timeout_s * 1000)));
  curl_easy_setopt(c, CURLOPT_USERAGENT, "sweepbench-serve");
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode code = curl_easy_perform(c);
  if (code == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
  } else {
    answer.error = curl_easy_strerror(code);
  }
  curl_easy_cleanup(c);
  return answer;
}

std::vector<RequestTiming> timings_of(const LoadResult& result) {
  std::vector<RequestTiming> out;
  out.reserve(result.requests.size());
  for (const RequestRecord& r : result.requests) out.push_back(r.timing);
  return out;
}

}  // namespace sweepbench::serve
