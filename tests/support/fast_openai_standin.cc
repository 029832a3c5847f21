// fast-openai-standin: a stand-in OpenAI-compatible streaming server that costs next to nothing,
// to measure the load client itself (bench/serve_client_speed.cc). It stands in for a real server
// (vLLM and others) only because a real one spends far more per request than the client does, so
// it would measure itself; tests/support/openai_standin.py is the stand-in for the fault paths.
//
// The success path of openai_standin.py's protocol: binds 127.0.0.1 (port 0 unless --port) and
// prints its port as the first stdout line; POST /v1/completions and /v1/chat/completions answer
// HTTP/1.1 (keep-alive) with a chunked event stream: for a chat, a role-only delta at once; then
// min(max_tokens, --chunks) chunks of one token each ("tok0 ", "tok1 ", ...), --first-delay seconds
// after the request before the first and --delay seconds between the others (0: at once, in one
// write), then a usage chunk and data: [DONE]. GET /stats gives {"requests": n,
// "max_concurrent": n, "in_flight": n} and, beyond the Python stand-in's, "timers" (delays waited
// so far) and "timers_late_s" (their lateness summed: the stand-in's own share of a measured TTFT).
//
// One thread, one epoll loop, non-blocking sockets with TCP_NODELAY; delays are a timer heap
// waited on with epoll_pwait2 (nanoseconds, where epoll_wait would round to milliseconds; it is
// the fallback before Linux 5.11).
// Left out: faults, echo:, standin_delay, --tokens-per-chunk, TLS, requests that are not
// Content-Length bodies (no chunked uploads), answers larger than a socket's buffer only queue.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

struct Options {
  int port = 0;
  long chunks = 8;
  double first_delay_s = 0, delay_s = 0;
};

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// One connection: the bytes read and not yet used, the bytes not yet written, and the answer it
// is streaming (if any). `serial` tells a timer that outlived its connection from the fd's reuse.
struct Conn {
  int fd = -1;
  unsigned long serial = 0;
  std::string in, out;
  bool streaming = false, want_out = false;
  bool chat = false;
  long chunks = 0, sent = 0, prompt_words = 0;
  std::string model;  // the request's "model" as it came: a JSON string, quotes included
};

struct Timer {
  double at;
  int fd;
  unsigned long serial;
  bool operator>(const Timer& o) const { return at > o.at; }
};

Options options;
int epfd = -1;
unsigned long next_serial = 1;
long requests_total = 0, in_flight = 0, max_concurrent = 0, timers_fired = 0;
double timers_late_s = 0;  // summed over the timers fired: how late this server itself was
std::unordered_map<int, std::unique_ptr<Conn>> conns;
std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;

void watch(int fd, uint32_t events, int op) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  epoll_ctl(epfd, op, fd, &ev);
}

void close_conn(Conn& c) {
  if (c.streaming) --in_flight;
  close(c.fd);  // also leaves epoll
  conns.erase(c.fd);
}

// Writes what it can now; queues the rest and asks epoll for EPOLLOUT. False: the peer is gone.
bool send_bytes(Conn& c, std::string_view data) {
  if (c.out.empty()) {
    ssize_t n = send(c.fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) return false;
    data.remove_prefix(n < 0 ? 0 : static_cast<size_t>(n));
  }
  c.out.append(data);
  if (!c.out.empty() && !c.want_out) {
    watch(c.fd, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
    c.want_out = true;
  }
  return true;
}

void add_chunk(std::string& out, std::string_view event) {
  char size[24];
  out.append(size, static_cast<size_t>(std::snprintf(size, sizeof size, "%zx\r\n", event.size())));
  out.append(event);
  out.append("\r\n");
}

void add_token(Conn& c, std::string& out) {
  const char* kind = c.chat ? "chat.completion.chunk" : "text_completion";
  const char* finish = c.sent + 1 == c.chunks ? "\"length\"" : "null";
  std::string text = "tok" + std::to_string(c.sent) + " ";
  std::string choice =
      c.chat ? "\"delta\": {\"content\": \"" + text + "\"}" : "\"text\": \"" + text + "\"";
  add_chunk(out, "data: {\"object\": \"" + std::string(kind) + "\", \"model\": " + c.model +
                     ", \"choices\": [{\"index\": 0, \"finish_reason\": " + finish + ", " + choice +
                     "}]}\n\n");
  ++c.sent;
}

void add_end(Conn& c, std::string& out) {
  std::string p = std::to_string(c.prompt_words), n = std::to_string(c.chunks);
  add_chunk(out, "data: {\"object\": \"" +
                     std::string(c.chat ? "chat.completion.chunk" : "text_completion") +
                     "\", \"choices\": [], \"usage\": {\"prompt_tokens\": " + p +
                     ", \"completion_tokens\": " + n +
                     ", \"total_tokens\": " + std::to_string(c.prompt_words + c.chunks) + "}}\n\n");
  add_chunk(out, "data: [DONE]\n\n");
  out.append("0\r\n\r\n");
}

// The string value of the last `"key": "..."` in a JSON body, escapes kept; npos-safe.
std::string_view json_string(std::string_view body, std::string_view key) {
  size_t k = body.rfind("\"" + std::string(key) + "\"");
  if (k == std::string_view::npos) return {};
  size_t q = body.find('"', body.find(':', k + key.size() + 2));
  if (q == std::string_view::npos) return {};
  size_t e = q + 1;
  while (e < body.size() && body[e] != '"') e += body[e] == '\\' ? 2 : 1;
  return body.substr(q, std::min(e, body.size() - 1) - q + 1);  // quotes included
}

void schedule(Conn& c, double at) { timers.push({at, c.fd, c.serial}); }

// The next token (or, with no delay, all that are left and the end). False: the peer is gone.
bool stream_on(Conn& c) {
  std::string out;
  while (c.sent < c.chunks) {
    add_token(c, out);
    if (options.delay_s > 0) break;
  }
  if (c.sent == c.chunks) {
    add_end(c, out);
    c.streaming = false;
    --in_flight;
  } else {
    schedule(c, now_s() + options.delay_s);
  }
  return send_bytes(c, out);
}

void answer_json(Conn& c, const char* status, const std::string& body) {
  send_bytes(c, std::string("HTTP/1.1 ") + status +
                    "\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body);
}

// Handles every whole request in c.in (keep-alive, pipelining); false: close the connection.
bool serve_requests(Conn& c) {
  while (!c.streaming) {
    size_t head_end = c.in.find("\r\n\r\n");
    if (head_end == std::string::npos) return c.in.size() < 65536;
    std::string head = c.in.substr(0, head_end);
    std::string lower = head;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    size_t cl = lower.find("\r\ncontent-length:");
    size_t length = cl == std::string::npos ? 0 : std::strtoul(head.c_str() + cl + 17, nullptr, 10);
    if (c.in.size() < head_end + 4 + length) return true;  // the body is still coming
    std::string_view body(c.in.data() + head_end + 4, length);
    std::string_view target(head);
    target = target.substr(0, target.find("\r\n"));
    if (target.rfind("GET /stats ", 0) == 0) {
      answer_json(c, "200 OK",
                  "{\"requests\": " + std::to_string(requests_total) +
                      ", \"max_concurrent\": " + std::to_string(max_concurrent) +
                      ", \"in_flight\": " + std::to_string(in_flight) +
                      ", \"timers\": " + std::to_string(timers_fired) +
                      ", \"timers_late_s\": " + std::to_string(timers_late_s) + "}");
    } else if (target.rfind("POST /v1/completions ", 0) == 0 ||
               target.rfind("POST /v1/chat/completions ", 0) == 0) {
      c.chat = target.find("/chat/") != std::string_view::npos;
      size_t mt = body.find("\"max_tokens\"");
      long max_tokens = mt == std::string_view::npos
                            ? options.chunks
                            : std::strtol(body.data() + body.find(':', mt) + 1, nullptr, 10);
      c.chunks = std::max(0L, std::min(max_tokens, options.chunks));
      c.sent = 0;
      std::string_view model = json_string(body, "model");
      c.model = model.empty() ? "\"\"" : std::string(model);
      std::string_view prompt = json_string(body, c.chat ? "content" : "prompt");
      c.prompt_words = 0;  // words, as the Python stand-in counts (escapes count as letters)
      for (size_t i = 1; i + 1 < prompt.size(); ++i)
        c.prompt_words += prompt[i] != ' ' && (i == 1 || prompt[i - 1] == ' ');
      ++requests_total;
      max_concurrent = std::max(max_concurrent, ++in_flight);
      c.streaming = true;
      std::string out =
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
          "Transfer-Encoding: chunked\r\n\r\n";
      if (c.chat)
        add_chunk(out,
                  "data: {\"object\": \"chat.completion.chunk\", \"choices\": [{\"index\": 0, "
                  "\"delta\": {\"role\": \"assistant\"}, \"finish_reason\": null}]}\n\n");
      c.in.erase(0, head_end + 4 + length);
      if (options.first_delay_s > 0) {
        schedule(c, now_s() + options.first_delay_s);
        if (!send_bytes(c, out)) return false;
      } else {
        if (!send_bytes(c, out) || !stream_on(c)) return false;
      }
      continue;
    } else {
      answer_json(c, "404 Not Found",
                  "{\"error\": {\"message\": \"no such path\", \"type\": \"not_found\"}}");
    }
    c.in.erase(0, head_end + 4 + length);
  }
  return true;
}

void on_readable(Conn& c) {
  char buf[16384];
  for (;;) {
    ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buf) break;
    } else if (n < 0 && errno == EAGAIN) {
      break;
    } else {
      return close_conn(c);  // the peer closed, or an error
    }
  }
  if (!serve_requests(c)) close_conn(c);
}

void on_writable(Conn& c) {
  ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
  if (n < 0 && errno != EAGAIN) return close_conn(c);
  c.out.erase(0, n < 0 ? 0 : static_cast<size_t>(n));
  if (c.out.empty()) {
    watch(c.fd, EPOLLIN, EPOLL_CTL_MOD);
    c.want_out = false;
    if (!serve_requests(c)) close_conn(c);  // a request that came while we wrote
  }
}

void on_accept(int listener) {
  for (;;) {
    int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or out of descriptors: the backlog keeps the rest
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->serial = next_serial++;
    watch(fd, EPOLLIN, EPOLL_CTL_ADD);
    conns[fd] = std::move(c);
  }
}

double parse_seconds(const char* flag, const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0)) {
    std::fprintf(stderr, "fast-openai-standin: %s wants seconds >= 0, not '%s'\n", flag, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: fast-openai-standin [--port N] [--chunks N] [--first-delay S]"
                   " [--delay S]\n");
      return 2;
    }
    const char* value = argv[++i];
    if (flag == "--port")
      options.port = std::atoi(value);
    else if (flag == "--chunks")
      options.chunks = std::max(0L, std::atol(value));
    else if (flag == "--first-delay")
      options.first_delay_s = parse_seconds("--first-delay", value);
    else if (flag == "--delay")
      options.delay_s = parse_seconds("--delay", value);
    else {
      std::fprintf(stderr, "fast-openai-standin: unknown option '%s'\n", flag.c_str());
      return 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(options.port));
  socklen_t len = sizeof addr;
  // A backlog of 4096 (the kernel caps it at somaxconn): 1,000 clients may connect at once.
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(listener, 4096) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("fast-openai-standin: bind/listen");
    return 1;
  }
  std::printf("%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  epfd = epoll_create1(EPOLL_CLOEXEC);
  watch(listener, EPOLLIN, EPOLL_CTL_ADD);
  std::vector<epoll_event> events(1024);
  for (;;) {
    timespec wait{}, *wait_p = nullptr;
    if (!timers.empty()) {
      double w = std::max(0.0, timers.top().at - now_s());
      wait.tv_sec = static_cast<time_t>(w);
      wait.tv_nsec = static_cast<long>((w - static_cast<double>(wait.tv_sec)) * 1e9);
      wait_p = &wait;
    }
    int n = epoll_pwait2(epfd, events.data(), static_cast<int>(events.size()), wait_p, nullptr);
    if (n < 0 && errno == ENOSYS) {  // before Linux 5.11: milliseconds, rounded up
      int ms = wait_p == nullptr
                   ? -1
                   : static_cast<int>(wait.tv_sec * 1000 + (wait.tv_nsec + 999999) / 1000000);
      n = epoll_wait(epfd, events.data(), static_cast<int>(events.size()), ms);
    }
    for (int i = 0; i < n; ++i) {
      int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == listener) {
        on_accept(listener);
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      uint32_t what = events[static_cast<size_t>(i)].events;
      if (what & EPOLLOUT) on_writable(*it->second);
      it = conns.find(fd);  // writing may have closed it
      if (it != conns.end() && (what & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_readable(*it->second);
    }
    for (double t = now_s(); !timers.empty() && timers.top().at <= t;) {
      Timer due = timers.top();
      timers.pop();
      auto it = conns.find(due.fd);
      if (it == conns.end() || it->second->serial != due.serial) continue;  // closed since
      ++timers_fired;
      timers_late_s += now_s() - due.at;  // each one's own: the writes before it count
      if (!stream_on(*it->second)) close_conn(*it->second);
    }
  }
}
