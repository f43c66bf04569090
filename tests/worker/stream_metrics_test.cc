// R-MET-1 with fixed chunk times: a recorded chat stream whose
// content chunks arrive 0.5, 0.6 and 0.7 s after the send, preceded by a
// role-only chunk at 0.05 s and followed by a usage-only chunk, gives
// TTFT 0.5 s, ITL [0.1, 0.1] and TPOT (0.7 − 0.5)/(3 − 1) = 0.1 s. The events
// go through the same parser, event reader and metrics as the Beast sender.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/results/summary.h"
#include "worker/http/openai_request.h"
#include "worker/http/response_metrics.h"
#include "worker/http/sse_parser.h"

namespace surge::worker {
namespace {

using ::testing::ElementsAre;

constexpr int64_t kMs = 1000000;

TEST(StreamMetricsTest, FixedChunkTimesGiveTheFieldsDefinitions) {
  const int64_t sent_ns = 1000 * kMs;
  // (arrival after send, bytes on the wire)
  const std::vector<std::pair<int64_t, std::string>> wire = {
      {50 * kMs, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"},
      {500 * kMs, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"},
      {600 * kMs, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\r\n\r\n"},
      {700 * kMs, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"}}]}\n\n: ka\n\n"},
      {710 * kMs,
       "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
       "\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"},
  };
  SseParser parser;
  ResponseMetrics metrics(sent_ns);
  for (const auto& [after_ns, bytes] : wire) {
    const int64_t now = sent_ns + after_ns;
    for (const std::string& data : parser.Feed(bytes)) {
      if (data == "[DONE]") continue;
      auto parsed = ParseStreamEvent(ApiKind::kChat, data);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      if (!parsed->content.empty()) metrics.OnContentEvent(now, parsed->content.size());
      if (parsed->usage.has_value()) metrics.OnUsage(*parsed->usage);
    }
    metrics.OnLastByte(now);
  }
  surge::v1::RequestRecord record;
  metrics.FillRecord(/*estimated_input_tokens=*/9, record);
  EXPECT_EQ(record.ttft_ns(), 500 * kMs);  // the role-only chunk at 50 ms is not a token
  EXPECT_THAT(record.itl_ns(), ElementsAre(100 * kMs, 100 * kMs));
  EXPECT_EQ(record.e2el_ns(), 710 * kMs);
  EXPECT_EQ(record.output_tokens(), 3u);
  EXPECT_FALSE(record.output_tokens_estimated());
  EXPECT_EQ(record.input_tokens(), 12u);

  // TPOT as the summary computes it, over a stream whose last byte is the
  // last content chunk: (0.7 − 0.5)/(3 − 1).
  record.set_status(surge::v1::OK);
  record.set_sent(true);
  record.set_e2el_ns(700 * kMs);
  const auto summary = surge::coordinator::Summarize({record});
  EXPECT_NEAR(summary.tpot_s.p50, 0.1, 1e-12);
  EXPECT_NEAR(summary.ttft_s.p50, 0.5, 1e-12);
  EXPECT_NEAR(summary.itl_s.mean, 0.1, 1e-12);
}

}  // namespace
}  // namespace surge::worker
