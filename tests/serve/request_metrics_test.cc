// serve/request_metrics.h against worked examples computed by hand from its header's formulas.
#include "serve/request_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace sweepbench::serve {
namespace {

constexpr double kEps = 1e-12;

// Sent at 10.0; token chunks at 10.5 (1 token), 10.6 (1), 10.8 (2), 11.0 (1); usage says 5.
RequestTiming worked_request() {
  RequestTiming t;
  t.send_s = 10.0;
  t.chunks = {{10.5, 1}, {10.6, 1}, {10.8, 2}, {11.0, 1}};
  t.end_s = 11.0;
  t.prompt_tokens = 20;
  t.output_tokens = 5;
  return t;
}

TEST(RequestMetrics, ComputesOneRequestsTimes) {
  RequestMetrics m = request_metrics(worked_request());
  ASSERT_TRUE(m.ok);
  EXPECT_NEAR(m.ttft_s, 0.5, kEps);
  EXPECT_NEAR(m.e2e_s, 1.0, kEps);
  // (1.0 - 0.5) / (5 - 1): the first token excluded.
  EXPECT_NEAR(m.tpot_s, 0.125, kEps);
  // One gap per chunk, not per token.
  ASSERT_EQ(m.itl_s.size(), 3u);
  EXPECT_NEAR(m.itl_s[0], 0.1, kEps);
  EXPECT_NEAR(m.itl_s[1], 0.2, kEps);
  EXPECT_NEAR(m.itl_s[2], 0.2, kEps);
  EXPECT_EQ(m.output_tokens, 5);
}

TEST(RequestMetrics, ChunksWithoutATokenTimeNothing) {
  // The chat answer's role-only delta at 10.1 and a trailing usage chunk: neither is a token.
  RequestTiming t = worked_request();
  t.chunks.insert(t.chunks.begin(), {10.1, 0});
  t.chunks.push_back({11.2, 0});
  RequestMetrics m = request_metrics(t);
  ASSERT_TRUE(m.ok);
  EXPECT_NEAR(m.ttft_s, 0.5, kEps);
  EXPECT_EQ(m.itl_s.size(), 3u);
  EXPECT_NEAR(m.tpot_s, 0.125, kEps);
}

TEST(RequestMetrics, CountsTheChunksTokensWithoutUsage) {
  RequestTiming t = worked_request();
  t.output_tokens = -1;
  t.chunks[2].tokens = 4;  // 1 + 1 + 4 + 1 = 7
  RequestMetrics m = request_metrics(t);
  EXPECT_EQ(m.output_tokens, 7);
  EXPECT_NEAR(m.tpot_s, 0.5 / 6, kEps);
}

TEST(RequestMetrics, OneTokenHasNoTpotAndMeetsAnyTpotBound) {
  RequestTiming t;
  t.send_s = 0;
  t.chunks = {{0.3, 1}};
  t.end_s = 0.3;
  RequestMetrics m = request_metrics(t);
  ASSERT_TRUE(m.ok);
  EXPECT_TRUE(std::isnan(m.tpot_s));
  EXPECT_TRUE(m.itl_s.empty());
  EXPECT_TRUE(meets_sla(m, Sla{1.0, 1e-9, 1.0}));
  EXPECT_FALSE(meets_sla(m, Sla{0.2, 1e-9, 1.0}));
}

TEST(RequestMetrics, AStreamWithoutTokensFailsAsNoOutput) {
  RequestTiming t;
  t.chunks = {{0.2, 0}};
  RequestMetrics m = request_metrics(t);
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.error, RequestError::kNoOutput);
  t.error = RequestError::kServer;  // an error of its own is kept
  EXPECT_EQ(request_metrics(t).error, RequestError::kServer);
}

TEST(RequestMetrics, RefusesATimingThatContradictsItself) {
  RequestTiming before_send = worked_request();
  before_send.chunks[0].time_s = 9.0;
  EXPECT_THROW(request_metrics(before_send), std::invalid_argument);
  RequestTiming out_of_order = worked_request();
  std::swap(out_of_order.chunks[1], out_of_order.chunks[2]);
  EXPECT_THROW(request_metrics(out_of_order), std::invalid_argument);
  RequestTiming early_end = worked_request();
  early_end.end_s = 10.9;
  EXPECT_THROW(request_metrics(early_end), std::invalid_argument);
  RequestTiming negative = worked_request();
  negative.chunks[0].tokens = -1;
  EXPECT_THROW(request_metrics(negative), std::invalid_argument);
}

TEST(Percentiles, InterpolateLinearlyBetweenOrderStatistics) {
  // Type 7 (numpy's default), by hand: n = 5, h = q (n - 1).
  // p50: h = 2 -> 35; p90: h = 3.6 -> 40 + 0.6 x 10 = 46; p95: h = 3.8 -> 48;
  // p99: h = 3.96 -> 49.6; mean 32.
  Percentiles p = percentiles_of({50, 15, 40, 20, 35});
  EXPECT_EQ(p.count, 5u);
  EXPECT_NEAR(p.p50, 35, kEps);
  EXPECT_NEAR(p.p90, 46, kEps);
  EXPECT_NEAR(p.p95, 48, kEps);
  EXPECT_NEAR(p.p99, 49.6, kEps);
  EXPECT_NEAR(p.mean, 32, kEps);
  // 1..10 in a shuffled order: p50 5.5, p90 9.1, p95 9.55, p99 9.91 (the header's example).
  std::vector<double> ten{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::shuffle(ten.begin(), ten.end(), std::mt19937_64(3));
  Percentiles q = percentiles_of(ten);
  EXPECT_NEAR(q.p50, 5.5, kEps);
  EXPECT_NEAR(q.p90, 9.1, kEps);
  EXPECT_NEAR(q.p95, 9.55, kEps);
  EXPECT_NEAR(q.p99, 9.91, kEps);
  // One value is every percentile; none gives NaN.
  EXPECT_EQ(percentiles_of({7}).p99, 7);
  EXPECT_TRUE(std::isnan(percentiles_of({}).p50));
}

TEST(PointMetrics, ComputesAPointFromItsRequests) {
  // Four successful requests and three failed ones over a 10 s load.
  auto request = [](double send, double ttft, double gap, int tokens, std::int64_t prompt) {
    RequestTiming t;
    t.send_s = send;
    for (int i = 0; i < tokens; ++i) t.chunks.push_back({send + ttft + gap * i, 1});
    t.end_s = t.chunks.back().time_s;
    t.prompt_tokens = prompt;
    return t;
  };
  std::vector<RequestTiming> rs = {
      request(0.0, 0.2, 0.05, 11, 100),  // e2e 0.7, tpot 0.05
      request(1.0, 0.4, 0.10, 6, 50),    // e2e 0.9, tpot 0.10
      request(2.0, 1.5, 0.02, 21, 10),   // e2e 1.9, tpot 0.02: TTFT over the SLA
      request(3.0, 0.1, 0.00, 1, 40),    // e2e 0.1, no TPOT: meets the TPOT bound
  };
  RequestTiming refused;
  refused.send_s = 4.0;
  refused.error = RequestError::kHttpStatus;
  RequestTiming dead;
  dead.send_s = 5.0;
  dead.chunks = {{5.5, 1}};
  dead.error = RequestError::kStream;
  RequestTiming empty;
  empty.send_s = 6.0;
  empty.end_s = 6.5;
  rs.push_back(refused);
  rs.push_back(dead);
  rs.push_back(empty);

  PointMetrics p = point_metrics(rs, 10.0, Sla{1.0, 0.08, 10.0});
  EXPECT_EQ(p.requests, 7u);
  EXPECT_EQ(p.succeeded, 4u);
  EXPECT_EQ(p.failed, 3u);
  EXPECT_EQ(p.errors[static_cast<size_t>(RequestError::kHttpStatus)], 1u);
  EXPECT_EQ(p.errors[static_cast<size_t>(RequestError::kStream)], 1u);
  EXPECT_EQ(p.errors[static_cast<size_t>(RequestError::kNoOutput)], 1u);
  EXPECT_EQ(p.errors[static_cast<size_t>(RequestError::kNone)], 0u);
  // Good: the first (0.2 <= 1, 0.05 <= 0.08) and the fourth; the second misses TPOT, the third
  // TTFT.
  EXPECT_EQ(p.good, 2u);
  EXPECT_NEAR(p.goodput, 0.2, kEps);
  EXPECT_NEAR(p.request_throughput, 0.4, kEps);
  EXPECT_EQ(p.output_tokens, 11 + 6 + 21 + 1);
  EXPECT_NEAR(p.output_tokens_per_s, 3.9, kEps);
  EXPECT_NEAR(p.total_tokens_per_s, (39.0 + 200.0) / 10, kEps);
  // 39 tokens over 0.7 + 0.9 + 1.9 + 0.1 = 3.6 s of requests in flight.
  EXPECT_NEAR(p.tokens_per_s_per_user, 39 / 3.6, 1e-9);
  // TTFT {0.2, 0.4, 1.5, 0.1}: sorted {0.1, 0.2, 0.4, 1.5}, p50 h = 1.5 -> 0.3;
  // p90 h = 2.7 -> 0.4 + 0.7 x 1.1 = 1.17.
  EXPECT_EQ(p.ttft_s.count, 4u);
  EXPECT_NEAR(p.ttft_s.p50, 0.3, 1e-9);
  EXPECT_NEAR(p.ttft_s.p90, 1.17, 1e-9);
  // TPOT of the three with 2 or more tokens: {0.05, 0.10, 0.02}, p50 0.05.
  EXPECT_EQ(p.tpot_s.count, 3u);
  EXPECT_NEAR(p.tpot_s.p50, 0.05, 1e-9);
  // ITL pooled: 10 gaps of 0.05, 5 of 0.10, 20 of 0.02.
  EXPECT_EQ(p.itl_s.count, 35u);
  EXPECT_NEAR(p.itl_s.mean, (10 * 0.05 + 5 * 0.10 + 20 * 0.02) / 35, 1e-9);
  EXPECT_NEAR(p.itl_s.p50, 0.02, 1e-9);  // the 18th of 35 is among the 20 of 0.02
  EXPECT_NEAR(p.e2e_s.mean, 3.6 / 4, 1e-9);
}

TEST(PointMetrics, ProducesNaNRatesWithoutADurationAndNaNTotalsWithoutPromptCounts) {
  RequestTiming t = worked_request();
  t.prompt_tokens = -1;
  PointMetrics p = point_metrics({t}, 0.0);
  EXPECT_TRUE(std::isnan(p.request_throughput));
  EXPECT_TRUE(std::isnan(p.goodput));
  PointMetrics q = point_metrics({t}, 2.0);
  EXPECT_NEAR(q.request_throughput, 0.5, kEps);
  EXPECT_TRUE(std::isnan(q.total_tokens_per_s));
  EXPECT_EQ(q.good, 1u);  // no SLA: every successful request is good
}

TEST(PointMetrics, LoadDurationRunsFromTheFirstSendToTheLastEnd) {
  RequestTiming a = worked_request();  // 10.0 .. 11.0
  RequestTiming b;
  b.send_s = 10.5;
  b.error = RequestError::kConnect;  // no answer: its send counts
  RequestTiming c = worked_request();
  c.send_s = 10.2;
  c.end_s = 12.5;
  EXPECT_NEAR(load_duration({a, b, c}), 2.5, kEps);
  EXPECT_EQ(load_duration({}), 0);
}

}  // namespace
}  // namespace sweepbench::serve
