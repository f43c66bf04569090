// End-to-end: answers of unusual shape through the real `surge run`. The
// built-in server answers requests that carry "tools" with streamed tool
// calls (records ok, finish_reason tool_calls); a server that redirects
// gets one warning per run. All on 127.0.0.1, few requests, bounded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/run_folder_check.h"
#include "tests/integration/surge_process.h"
#include "tests/worker/http/canned_server.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Occurrences of `needle` in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The records of a run folder's synthetic_details.jsonl, in file order.
std::vector<nlohmann::json> DetailsRecords(const fs::path& folder) {
  std::ifstream details(folder / "synthetic_details.jsonl");
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(details, line);) {
    records.push_back(nlohmann::json::parse(line));
  }
  return records;
}

TEST(AnswerShapesE2eTest, ToolCallsOfTheBuiltInServerAreOkRecords) {
  const fs::path out = FreshDir("surge_e2e_tool_calls");
  const std::string tools =
      R"({"tools":[{"type":"function","function":{"name":"get_weather",)"
      R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]})";
  const Result r = RunSurge(
      "run --num-prompts 8 --request-rate 20 --random-input-len 16 "
      "--random-output-len 5 --sim-ttft-ms 20 --sim-itl-ms 5 --seed 1 "
      "--extra-body '" +
      tools + "' --output-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  const RunFolderReport report = CheckRunFolder(folder, "synthetic");
  EXPECT_TRUE(report.problems.empty()) << report.Describe();
  EXPECT_EQ(report.ok, 8u);
  const std::vector<nlohmann::json> records = DetailsRecords(folder);
  for (const nlohmann::json& rec : records) {
    EXPECT_EQ(rec["status"], "ok") << rec;
    EXPECT_EQ(rec["finish_reason"], "tool_calls") << rec;
    EXPECT_EQ(rec["output_tokens"], 5) << rec;
    EXPECT_EQ(rec["output_tokens_estimated"], false) << rec;
    // The name at the first token (ttft_ms 20), the arguments' four pieces after it.
    ASSERT_TRUE(rec["ttft_s"].is_number()) << rec;
    EXPECT_GE(rec["ttft_s"].get<double>(), 0.020) << rec;
    EXPECT_EQ(rec["itl_s"].size(), 4u) << rec;
  }
  EXPECT_EQ(records.size(), 8u);
}

TEST(AnswerShapesE2eTest, ARedirectingServerIsWarnedAboutOnce) {
  CannedServer server([](const std::string&) {
    return std::string(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/chat/completions\r\n"
        "Content-Length: 0\r\n\r\n");
  });
  const fs::path out = FreshDir("surge_e2e_redirect");
  const Result r = RunSurge(
      "run --num-prompts 5 --request-rate 50 --random-input-len 16 "
      "--random-output-len 4 --model m --base-url " +
      server.base_url() + " --output-dir " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Count(r.output, "was redirected"), 1u) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(http_307: redirect to /v2/chat/completions (not followed)): "
                                  "surge does not follow redirects"));
  EXPECT_THAT(r.output, HasSubstr("set --endpoint /v2/chat/completions"));
  // The five planned requests, each once: none went to the Location.
  size_t posts = 0;
  for (const std::string& request : server.requests()) {
    if (request.rfind("POST /v1/chat/completions ", 0) == 0) ++posts;
    EXPECT_EQ(request.find("/v2/"), std::string::npos) << request.substr(0, 80);
  }
  EXPECT_EQ(posts, 5u);
  const fs::path folder = ResultsFolder(r.output);
  const std::vector<nlohmann::json> records = DetailsRecords(folder);
  for (const nlohmann::json& rec : records) {
    EXPECT_EQ(rec["status"], "failed") << rec;
    EXPECT_EQ(rec["error"], "http_307: redirect to /v2/chat/completions (not followed)") << rec;
  }
  EXPECT_EQ(records.size(), 5u);
}

}  // namespace
}  // namespace surge::testing
