// The load client against the stand-in OpenAI-compatible server (tests/support/openai_standin.py,
// a real HTTP server on loopback that streams as real servers do, standing in for them for the
// fault paths and known delays; later tests use a real vLLM server): every request's timings,
// token counts, the concurrency held, each fault classified, prompts escaped; and many requests
// against the fast C++ stand-in (tests/support/fast_openai_standin.cc).
#include "serve/load_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/value.h"
#include "config/yaml_io.h"
#include "os/process.h"
#include "serve/arrivals.h"
#include "serve/request_metrics.h"
#include "serve/sse.h"

namespace sweepbench::serve {
namespace {

// The stand-in as a child process: started with its options, its port read from its first
// line, killed at the end.
class StandIn {
 public:
  // `program`: the Python stand-in unless given (fast-openai-standin, for the many-request test).
  explicit StandIn(std::vector<std::string> options,
                   std::vector<std::string> program = {"/usr/bin/python3", SWEEPBENCH_SOURCE_DIR
                                                       "/tests/support/openai_standin.py"}) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    SpawnSpec spec;
    spec.argv = std::move(program);
    spec.argv.insert(spec.argv.end(), options.begin(), options.end());
    spec.stdout_fd = fds[1];
    spec.parent_death_signal = SIGKILL;
    Spawned s = spawn_process(spec);
    close(fds[1]);
    pid_ = s.pid;
    std::string line;
    char c = 0;
    while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    out_ = fds[0];
    port_ = std::atoi(line.c_str());
    if (port_ <= 0) throw std::runtime_error("the stand-in gave no port: '" + line + "'");
  }
  ~StandIn() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    close(out_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // GET /stats, read with Python's urllib (the client under test speaks only streams).
  Value stats() const {
    std::string cmd =
        "/usr/bin/python3 -c \"import urllib.request,sys; "
        "sys.stdout.write(urllib.request.urlopen('" +
        url() + "/stats').read().decode())\"";
    FILE* f = popen(cmd.c_str(), "r");
    std::string text;
    char buf[256];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
    pclose(f);
    return parse_own_yaml(text, "stats");
  }

 private:
  int pid_ = -1;
  int out_ = -1;
  int port_ = 0;
};

std::vector<LoadRequest> plain_requests(size_t n, std::int64_t max_tokens) {
  std::vector<LoadRequest> requests;
  for (size_t i = 0; i < n; ++i)
    requests.push_back({"prompt number " + std::to_string(i), max_tokens});
  return requests;
}

// Delays: the stand-in sleeps 50 ms before the first token and 20 ms between tokens. Python's
// time.sleep never returns early, so no gap the server makes is shorter; the client can see one
// shorter only when it read the chunk before that one late. The upper tolerance is for a shared
// 2-core machine (a CI build beside it): the median ITL within 15 ms above the delay, well under a
// second delay, which would show a chunk held back (Nagle's algorithm with delayed ACKs holds a
// small write 40 ms, buffering longer). The median TTFT gets 30 ms: Python's thread that answers
// must first be scheduled and read the request, on cores a build may be using.
constexpr double kFirst = 0.05, kDelay = 0.02;

TEST(LoadClient, FixedConcurrencyTimesEveryTokenAndHoldsTheConcurrency) {
  StandIn server({"--chunks", "6", "--first-delay", "0.05", "--delay", "0.02"});
  LoadTarget target{server.url(), "/v1/completions", "tiny", Value()};
  LoadResult result = run_at_concurrency(target, plain_requests(20, 6), 4);
  ASSERT_EQ(result.requests.size(), 20u);
  for (const RequestRecord& r : result.requests) {
    ASSERT_EQ(r.timing.error, RequestError::kNone) << r.message;
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.timing.chunks.size(), 6u);
    EXPECT_EQ(r.timing.output_tokens, 6);
    EXPECT_EQ(r.timing.prompt_tokens, 3);  // the stand-in counts words
    EXPECT_EQ(r.text, "tok0 tok1 tok2 tok3 tok4 tok5 ");
    EXPECT_GE(r.timing.chunks.front().time_s - r.timing.send_s, kFirst);
  }
  EXPECT_EQ(result.max_in_flight, 4);
  Value stats = server.stats();
  EXPECT_EQ(int_field(stats, "requests", -1), 20);
  EXPECT_EQ(int_field(stats, "max_concurrent", -1), 4);

  PointMetrics m = point_metrics(timings_of(result), result.duration_s);
  EXPECT_EQ(m.succeeded, 20u);
  EXPECT_EQ(m.output_tokens, 120);
  EXPECT_GE(m.ttft_s.p50, kFirst);
  // The upper bounds catch a client that holds tokens back; they leave room for a CI machine
  // whose two cores run other tests beside this one (a 30 ms bound failed nowhere here, but
  // one late turn of the stand-in's thread must not fail CI).
  EXPECT_LT(m.ttft_s.p50, kFirst + 0.2);
  EXPECT_EQ(m.itl_s.count, 100u);
  EXPECT_GT(m.itl_s.p50, kDelay - 0.002);
  EXPECT_LT(m.itl_s.p50, kDelay + 0.05);
  // 20 requests, 4 at a time: 5 rounds of about 50 + 5 x 20 = 150 ms.
  EXPECT_GE(result.duration_s, 5 * (kFirst + 5 * kDelay));
  EXPECT_LT(result.duration_s, 5 * (kFirst + 5 * kDelay) + 1.0);
}

TEST(LoadClient, ChatAnswersRoleDeltaIsNoToken) {
  StandIn server({"--chunks", "4", "--first-delay", "0.05", "--delay", "0.01"});
  LoadTarget target{server.url(), "/v1/chat/completions", "tiny", Value()};
  LoadResult result = run_at_concurrency(target, plain_requests(6, 4), 2);
  for (const RequestRecord& r : result.requests) {
    ASSERT_EQ(r.timing.error, RequestError::kNone) << r.message;
    EXPECT_EQ(r.timing.chunks.size(), 4u);
    // The role-only delta comes at once; TTFT ends at the first token, after the first delay.
    EXPECT_GE(r.timing.chunks.front().time_s - r.timing.send_s, kFirst);
  }
  EXPECT_EQ(int_field(server.stats(), "max_concurrent", -1), 2);
}

TEST(LoadClient, PoissonScheduleSendsAtItsTimes) {
  StandIn server({"--chunks", "3", "--delay", "0.005"});
  LoadTarget target{server.url(), "/v1/completions", "tiny", Value()};
  std::vector<double> times = send_times(PoissonRate{50.0}, {0, 30}, 7);
  ASSERT_EQ(times.size(), 30u);
  LoadResult result = run_at_times(target, plain_requests(30, 3), times);
  std::vector<double> late;
  for (size_t i = 0; i < times.size(); ++i) {
    const RequestRecord& r = result.requests[i];
    ASSERT_EQ(r.timing.error, RequestError::kNone) << r.message;
    EXPECT_EQ(r.timing.chunks.size(), 3u);
    // Sent at its time: never early, late by at most the loop's turn on a busy machine.
    EXPECT_GE(r.timing.send_s, times[i]);
    EXPECT_LT(r.timing.send_s, times[i] + 0.25) << i;
    late.push_back(r.timing.send_s - times[i]);
  }
  std::sort(late.begin(), late.end());
  EXPECT_LT(late[late.size() / 2], 0.02);  // typically under a millisecond
  EXPECT_GE(result.duration_s, times.back());
  PointMetrics m = point_metrics(timings_of(result), result.duration_s);
  EXPECT_EQ(m.succeeded, 30u);
  EXPECT_EQ(m.output_tokens, 90);
}

TEST(LoadClient, PromptsAreEscapedAndEchoedBack) {
  StandIn server({"--chunks", "2"});
  std::string prompt =
      "echo: \"quoted\" back\\slash\nnew line\ttab \x01 control, "
      "caf\xc3\xa9, \xe6\x97\xa5\xe6\x9c\xac, \xf0\x9f\x98\x80";
  for (const char* endpoint : {"/v1/completions", "/v1/chat/completions"}) {
    LoadTarget target{server.url(), endpoint, "tiny", Value()};
    LoadResult result = run_at_concurrency(target, {{prompt, 2}}, 1);
    const RequestRecord& r = result.requests[0];
    ASSERT_EQ(r.timing.error, RequestError::kNone) << r.message;
    EXPECT_EQ(r.text, prompt + "tok1 ") << endpoint;
  }
}

TEST(LoadClient, RequestBodyIsJson) {
  Value extra = Value::map();
  extra.set("ignore_eos", Value::boolean(true));
  LoadTarget target{"http://x", "/v1/completions", "m\"odel", extra};
  Value body = parse_own_yaml(request_body(target, {"a \"b\"\n", 7}), "body");
  EXPECT_EQ(text_field(body, "model"), "m\"odel");
  EXPECT_EQ(text_field(body, "prompt"), "a \"b\"\n");
  EXPECT_EQ(int_field(body, "max_tokens", -1), 7);
  ASSERT_NE(body.find("stream"), nullptr);
  EXPECT_TRUE(body.find("stream")->as_bool());
  EXPECT_TRUE(body.find("stream_options")->find("include_usage")->as_bool());
  EXPECT_TRUE(body.find("ignore_eos")->as_bool());
}

struct Fault {
  const char* prompt;
  RequestError kind;
  const char* message_part;
};

TEST(LoadClient, EachFaultIsItsErrorKindWithAUsefulMessage) {
  StandIn server({"--chunks", "4", "--delay", "0.005", "--hang", "20"});
  LoadTarget target{server.url(), "/v1/completions", "tiny", Value()};
  std::vector<Fault> faults = {
      {"fault:http-500", RequestError::kHttpStatus,
       "HTTP status 500: {\"error\": {\"message\": "
       "\"the stand-in failed on purpose\""},
      {"fault:malformed", RequestError::kStream, "bad-json"},
      {"fault:server-error", RequestError::kServer, "the stand-in's error mid-stream"},
      {"fault:close", RequestError::kStream, "before data: [DONE]"},
      {"fault:hang", RequestError::kTimeout, "time limit"},
  };
  std::vector<LoadRequest> requests;
  for (const Fault& f : faults) requests.push_back({f.prompt, 4});
  requests.push_back({"max_tokens 0: no token chunk, only the usage", 0});
  requests.push_back({"a good one among them", 4});
  LoadOptions options;
  options.request_timeout_s = 1.0;
  LoadResult result = run_at_concurrency(target, requests, 6, options);
  for (size_t i = 0; i < faults.size(); ++i) {
    const RequestRecord& r = result.requests[i];
    EXPECT_EQ(r.timing.error, faults[i].kind) << faults[i].prompt << ": " << r.message;
    EXPECT_NE(r.message.find(faults[i].message_part), std::string::npos)
        << faults[i].prompt << ": " << r.message;
  }
  const RequestRecord& empty = result.requests[faults.size()];
  EXPECT_EQ(empty.timing.error, RequestError::kNoOutput) << empty.message;
  EXPECT_EQ(empty.timing.output_tokens, 0);
  EXPECT_EQ(result.requests[0].http_status, 500);
  EXPECT_EQ(result.requests.back().timing.error, RequestError::kNone)
      << result.requests.back().message;
  // The hanging request ended at its limit, not the stand-in's 20 s.
  EXPECT_LT(result.duration_s, 5.0);
  PointMetrics m = point_metrics(timings_of(result), result.duration_s);
  EXPECT_EQ(m.succeeded, 1u);
  EXPECT_EQ(m.errors[static_cast<size_t>(RequestError::kStream)], 2u);
  EXPECT_EQ(m.errors[static_cast<size_t>(RequestError::kHttpStatus)], 1u);
  EXPECT_EQ(m.errors[static_cast<size_t>(RequestError::kServer)], 1u);
  EXPECT_EQ(m.errors[static_cast<size_t>(RequestError::kTimeout)], 1u);
  EXPECT_EQ(m.errors[static_cast<size_t>(RequestError::kNoOutput)], 1u);
}

TEST(LoadClient, UsageCountsTheTokensWhenAChunkCarriesSeveral) {
  // Each chunk stands for 3 tokens (as a server that batches its detokenised output): the chunks
  // time the answer, the usage chunk counts it.
  StandIn server({"--chunks", "5", "--tokens-per-chunk", "3", "--delay", "0.01"});
  LoadTarget target{server.url(), "/v1/completions", "tiny", Value()};
  LoadResult result = run_at_concurrency(target, plain_requests(4, 5), 2);
  for (const RequestRecord& r : result.requests) {
    ASSERT_EQ(r.timing.error, RequestError::kNone) << r.message;
    EXPECT_EQ(r.timing.chunks.size(), 5u);
    EXPECT_EQ(r.timing.output_tokens, 15);
    RequestMetrics m = request_metrics(r.timing);
    EXPECT_EQ(m.output_tokens, 15);
    EXPECT_NEAR(m.tpot_s, (m.e2e_s - m.ttft_s) / 14, 1e-12);
    EXPECT_EQ(m.itl_s.size(), 4u);
  }
}

TEST(LoadClient, NoServerIsAConnectError) {
  // A port that was free a moment ago: bound, then closed, nothing listens on it.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  LoadTarget target{"http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), "/v1/completions",
                    "tiny", Value()};
  LoadResult result = run_at_concurrency(target, plain_requests(3, 4), 2);
  for (const RequestRecord& r : result.requests) {
    EXPECT_EQ(r.timing.error, RequestError::kConnect) << r.message;
    EXPECT_NE(r.message.find("no answer"), std::string::npos) << r.message;
    EXPECT_EQ(r.http_status, 0);
  }
}

TEST(LoadClient, AWrongPathIsAnHttpStatus) {
  StandIn server({});
  LoadTarget target{server.url(), "/v1/nothing", "tiny", Value()};
  LoadResult result = run_at_concurrency(target, plain_requests(1, 4), 1);
  EXPECT_EQ(result.requests[0].timing.error, RequestError::kHttpStatus);
  EXPECT_EQ(result.requests[0].http_status, 404);
  EXPECT_NE(result.requests[0].message.find("no such path"), std::string::npos);
}

// Many short requests on kept connections and reused easy handles, against fast-openai-standin
// (support/fast_openai_standin.cc, the stand-in bench/serve_client_speed measures the client
// with): every answer whole, completions and chat, and the stand-in agrees on what it served.
TEST(LoadClient, ManyRequestsAgainstTheFastStandInAllComeBackWhole) {
  // 10 ms before the first token, so that the stand-in holds many at once (with none it ends
  // each answer as it reads the request: one at a time).
  StandIn server({"--chunks", "3", "--first-delay", "0.01"},
                 {SWEEPBENCH_BIN_DIR "/fast-openai-standin"});
  for (const char* endpoint : {"/v1/completions", "/v1/chat/completions"}) {
    LoadTarget target{server.url(), endpoint, "tiny", Value()};
    LoadResult result = run_at_concurrency(target, plain_requests(2000, 3), 32);
    EXPECT_EQ(result.max_in_flight, 32);
    for (const RequestRecord& r : result.requests) {
      ASSERT_EQ(r.timing.error, RequestError::kNone) << endpoint << ": " << r.message;
      EXPECT_EQ(r.text, "tok0 tok1 tok2 ");
      EXPECT_EQ(r.timing.chunks.size(), 3u);
      EXPECT_EQ(r.timing.output_tokens, 3);
      EXPECT_EQ(r.timing.prompt_tokens, 3);
    }
  }
  Value stats = server.stats();
  EXPECT_EQ(int_field(stats, "requests", -1), 4000);
  // Overlapping, never more than the plan; all 32 at once only if no refill was late by 10 ms,
  // which a loaded CI machine (or valgrind) does not promise.
  EXPECT_GT(int_field(stats, "max_concurrent", -1), 1);
  EXPECT_LE(int_field(stats, "max_concurrent", -1), 32);
  EXPECT_EQ(int_field(stats, "in_flight", -1), 0);
}

TEST(LoadClient, RejectsABadPlan) {
  LoadTarget target{"http://127.0.0.1:1", "/v1/completions", "tiny", Value()};
  EXPECT_THROW(run_at_concurrency(target, plain_requests(1, 4), 0), std::invalid_argument);
  EXPECT_THROW(run_at_times(target, plain_requests(2, 4), {0.0}), std::invalid_argument);
  EXPECT_THROW(run_at_times(target, plain_requests(2, 4), {0.2, 0.1}), std::invalid_argument);
}

}  // namespace
}  // namespace sweepbench::serve
