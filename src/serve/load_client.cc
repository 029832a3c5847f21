// The load client over libcurl's multi interface (load_client.h).
//
// Its own speed (bench/serve_client_speed.cc, docs/performance.md): libcurl's socket interface
// (curl_multi_socket_action) over our own epoll set, so that a wake-up costs the sockets that
// woke, not every transfer in flight as curl_multi_perform and curl_multi_poll do; easy handles
// kept and reused between requests, with the options every request shares set once.
#include "serve/load_client.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "config/yaml_io.h"
#include "serve/sse.h"
#include "text/text.h"

namespace sweepbench::serve {
namespace {

using Clock = std::chrono::steady_clock;

// The first bytes of a non-200 answer kept for its message: enough for a JSON error object.
constexpr size_t kErrorBodyBytes = 512;

// One request in flight: its easy handle (owned by the load's pool), its parser and what it
// recorded.
struct Transfer {
  size_t index = 0;
  CURL* easy = nullptr;
  std::string body;
  SseParser parser;
  std::vector<SseEvent> events;
  RequestRecord* record = nullptr;
  Clock::time_point start;
  std::string error_body;  // a non-200 answer's first bytes
  bool aborted = false;    // we ended the transfer (a stream or server error)
  bool saw_status = false;
  std::optional<StreamError> stream_error;
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

// The sockets libcurl asks us to watch (CURLMOPT_SOCKETFUNCTION) and when it next wants to be
// called without any (CURLMOPT_TIMERFUNCTION).
struct Watch {
  int epfd = -1;
  std::optional<Clock::time_point> curl_due;  // none: libcurl has no timer set

  ~Watch() {
    if (epfd >= 0) close(epfd);
  }
};

int on_socket(CURL*, curl_socket_t s, int what, void* user, void*) {
  Watch& w = *static_cast<Watch*>(user);
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(w.epfd, EPOLL_CTL_DEL, s, nullptr);  // ENOENT or EBADF: already gone
    return 0;
  }
  epoll_event ev{};
  ev.events =
      ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0u);
  ev.data.fd = s;
  if (epoll_ctl(w.epfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT)
    epoll_ctl(w.epfd, EPOLL_CTL_ADD, s, &ev);
  return 0;
}

int on_timer(CURLM*, long timeout_ms, void* user) {
  Watch& w = *static_cast<Watch*>(user);
  if (timeout_ms < 0)
    w.curl_due.reset();
  else
    w.curl_due = Clock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

// Waits up to `wait_s` for the set's events: to the nanosecond with epoll_pwait2 (Linux 5.11),
// else (older kernels, valgrind) with epoll_wait's milliseconds, rounded up so that a send time
// is never missed by waking early and spinning.
int wait_for_events(int epfd, std::vector<epoll_event>& events, double wait_s) {
  static std::atomic<bool> has_pwait2{true};
  if (has_pwait2.load(std::memory_order_relaxed)) {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(wait_s);
    ts.tv_nsec = static_cast<long>((wait_s - static_cast<double>(ts.tv_sec)) * 1e9);
    int n = epoll_pwait2(epfd, events.data(), static_cast<int>(events.size()), &ts, nullptr);
    if (n >= 0 || errno != ENOSYS) return n;
    has_pwait2.store(false, std::memory_order_relaxed);
  }
  return epoll_wait(epfd, events.data(), static_cast<int>(events.size()),
                    static_cast<int>(std::ceil(wait_s * 1000)));
}

// Easy handles kept between requests: a new one costs a few kilobytes of allocations and every
// option set again. The options all requests share are set when a handle is made.
class EasyPool {
 public:
  EasyPool(const std::string& url, const LoadOptions& options) : url_(url), options_(options) {
    headers_ = curl_slist_append(headers_, "Content-Type: application/json");
    headers_ = curl_slist_append(headers_, "Accept: text/event-stream");
    // No "Expect: 100-continue" wait before a long prompt's body.
    headers_ = curl_slist_append(headers_, "Expect:");
  }
  ~EasyPool() {
    for (CURL* c : made_) curl_easy_cleanup(c);  // in flight too, should the load have thrown
    curl_slist_free_all(headers_);
  }
  EasyPool(const EasyPool&) = delete;
  EasyPool& operator=(const EasyPool&) = delete;

  CURL* take() {
    if (!free_.empty()) {
      CURL* c = free_.back();
      free_.pop_back();
      return c;
    }
    CURL* c = curl_easy_init();
    if (c == nullptr) throw std::runtime_error("libcurl: cannot make an easy handle");
    made_.push_back(c);
    curl_easy_setopt(c, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(std::ceil(options_.request_timeout_s * 1000)));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::ceil(options_.connect_timeout_s * 1000)));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "sweepbench-serve");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    return c;
  }
  void give_back(CURL* c) { free_.push_back(c); }

 private:
  std::string url_;
  LoadOptions options_;
  curl_slist* headers_ = nullptr;
  std::vector<CURL*> made_, free_;
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
  std::string url = target.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += target.endpoint;
  // Declared before the multi handle so that they outlive it: its cleanup may still call
  // on_socket, and it detaches any easy handle left in it (a load that threw) before the pool
  // cleans them up.
  EasyPool pool(url, options);
  Watch watch;
  watch.epfd = epoll_create1(EPOLL_CLOEXEC);
  if (watch.epfd < 0) throw std::runtime_error("cannot make an epoll set");
  std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
  if (!multi) throw std::runtime_error("libcurl: cannot make a multi handle");
  curl_multi_setopt(multi.get(), CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(multi.get(), CURLMOPT_SOCKETDATA, &watch);
  curl_multi_setopt(multi.get(), CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(multi.get(), CURLMOPT_TIMERDATA, &watch);

  std::vector<std::unique_ptr<Transfer>> in_flight;
  const Clock::time_point start = Clock::now();
  size_t next = 0;
  int running = 0;

  auto start_request = [&](size_t i) {
    auto t = std::make_unique<Transfer>();
    t->index = i;
    t->record = &result.requests[i];
    t->start = start;
    t->body = std::move(bodies[i]);
    t->easy = pool.take();
    CURL* c = t->easy;
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, t->body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(c, CURLOPT_PRIVATE, t.get());
    t->record->timing.send_s = seconds_since(start);
    curl_multi_add_handle(multi.get(), c);
    // Sent now (on a kept connection; a new one starts connecting), not on the loop's next turn
    // after every other request started in this one: when many start at once (a closed loop's
    // slots, sends due together), each request's TTFT would hold the sends of those before it.
    curl_multi_socket_action(multi.get(), CURL_SOCKET_TIMEOUT, 0, &running);
    in_flight.push_back(std::move(t));
    result.max_in_flight = std::max(result.max_in_flight, static_cast<int>(in_flight.size()));
  };

  auto take_done = [&] {
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      CURL* easy = msg->easy_handle;
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, &t);
      CURLcode code = msg->data.result;
      curl_multi_remove_handle(multi.get(), easy);
      finish(*t, code);
      pool.give_back(easy);
      auto it = std::find_if(in_flight.begin(), in_flight.end(),
                             [t](const auto& p) { return p.get() == t; });
      std::swap(*it, in_flight.back());  // order in flight does not matter
      in_flight.pop_back();
    }
  };

  std::vector<epoll_event> events(256);
  while (next < requests.size() || !in_flight.empty()) {
    if (options.stop && options.stop()) {
      // Stopped: what is in flight ends here, failed; nothing more is sent.
      for (auto& t : in_flight) {
        curl_multi_remove_handle(multi.get(), t->easy);
        pool.give_back(t->easy);
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
    // Wait for the sockets, curl's own timer, or the next send time, whichever comes first;
    // 100 ms at most: what a wake-up missed by mistake could cost.
    double wait = 0.1;
    if (next < requests.size() && !due(next, seconds_since(start), in_flight.size()))
      wait = std::min(wait, std::max(0.0, wait_s(next, seconds_since(start))));
    if (watch.curl_due) {
      wait = std::min(
          wait,
          std::max(0.0, std::chrono::duration<double>(*watch.curl_due - Clock::now()).count()));
    }
    int n = wait_for_events(watch.epfd, events, wait);
    for (int k = 0; k < n; ++k) {
      const epoll_event& e = events[static_cast<size_t>(k)];
      int mask = ((e.events & EPOLLIN) != 0 ? CURL_CSELECT_IN : 0) |
                 ((e.events & EPOLLOUT) != 0 ? CURL_CSELECT_OUT : 0) |
                 ((e.events & (EPOLLERR | EPOLLHUP)) != 0 ? CURL_CSELECT_ERR : 0);
      curl_multi_socket_action(multi.get(), e.data.fd, mask, &running);
    }
    if (watch.curl_due && *watch.curl_due <= Clock::now()) {
      // Not cleared first: libcurl calls on_timer only when its next expiry changes, and one
      // still pending keeps this due, so that it is called again (within a millisecond).
      curl_multi_socket_action(multi.get(), CURL_SOCKET_TIMEOUT, 0, &running);
    }
    take_done();
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
