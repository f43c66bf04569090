// Exact token lengths through the real binary and its built-in server:
// `--tokenizer server` and `--tokenizer FILE.model` make every prompt the
// asked length as the server counts it, the estimate does not, and a server
// without a tokenize endpoint or a file that is not a model stop the run
// before anything is sent (exit 2). All traffic stays on 127.0.0.1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/surge_process.h"
#include "tests/worker/http/canned_server.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// 2,000 synthetic requests of 150..450 tokens, fast answers.
constexpr char kSynthetic[] =
    "run --num-prompts 2000 --request-rate 1000 --workers 1 --random-input-len 300 "
    "--random-len-dist uniform --random-range-ratio 0.5 --random-output-len 2 "
    "--sim-ttft-ms 1 --sim-itl-ms 0.1 ";

std::vector<nlohmann::json> Details(const fs::path& folder, const std::string& dataset) {
  std::vector<nlohmann::json> out;
  std::ifstream in(folder / (dataset + "_details.jsonl"));
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json Summary(const fs::path& folder, const std::string& dataset) {
  std::ifstream in(folder / (dataset + ".json"));
  return nlohmann::json::parse(in);
}

// OK records whose server count differs from the asked length; every
// record must be OK and counted by the server.
size_t Mismatches(const std::vector<nlohmann::json>& details, const std::string& counter) {
  size_t mismatches = 0;
  for (const auto& d : details) {
    EXPECT_EQ(d["status"], "ok") << d.dump();
    EXPECT_EQ(d["token_counter"], counter);
    EXPECT_EQ(d["input_tokens_estimated"], false);
    mismatches += d["input_tokens"] != d["asked_input_tokens"];
  }
  return mismatches;
}

// True when `dir` holds no run folder (it may exist, empty).
bool NoRunFolder(const fs::path& dir) { return !fs::exists(dir) || fs::is_empty(dir); }

// The tiny SentencePiece model of tests/testing/tiny_tokenizer_model.h.
fs::path TrainModel(const fs::path& dir) {
  fs::create_directories(dir);
  const std::string command = std::string("spm_train --input=") + SURGE_SOURCE_DIR +
                              "/common/corpus/public_domain.txt --model_prefix=" +
                              (dir / "tiny").string() +
                              " --vocab_size=300 --model_type=unigram --character_coverage=1.0"
                              " --minloglevel=2 > " + (dir / "spm_train.log").string() + " 2>&1";
  if (std::system(command.c_str()) != 0) return {};
  return dir / "tiny.model";
}

TEST(TokenLengthsEndToEndTest, ServerCounterMakesEveryPromptTheAskedLength) {
  const fs::path out = AbsentDir("surge_tok_server");
  const Result r = RunSurge(std::string(kSynthetic) + "--tokenizer server --output-dir " +
                            out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("vLLM/SGLang tokenize endpoint"));
  EXPECT_THAT(r.output, HasSubstr("the chat template counted"));
  EXPECT_THAT(r.output, HasSubstr("2000 prompts fitted"));
  const fs::path folder = ResultsFolder(r.output);
  const auto details = Details(folder, "synthetic");
  ASSERT_EQ(details.size(), 2000u);
  EXPECT_EQ(Mismatches(details, "server"), 0u);
  const nlohmann::json lengths = Summary(folder, "synthetic")["input_lengths"];
  EXPECT_EQ(lengths["counter"], "server");
  EXPECT_EQ(lengths["compared"], 2000);
  EXPECT_EQ(lengths["mismatches"], 0);
  EXPECT_EQ(lengths["max_abs_diff"], 0);
  EXPECT_NEAR(lengths["mean_asked"].get<double>(), 300, 10);
  EXPECT_THAT(r.output, HasSubstr("0 mismatching requests"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("WARNING: the server counted prompts")));
}

TEST(TokenLengthsEndToEndTest, TheEstimateMissesTheServersCount) {
  const fs::path out = AbsentDir("surge_tok_estimate");
  const Result r = RunSurge(std::string(kSynthetic) + "--output-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path folder = ResultsFolder(r.output);
  const auto details = Details(folder, "synthetic");
  ASSERT_EQ(details.size(), 2000u);
  const size_t mismatches = Mismatches(details, "estimate");
  EXPECT_GT(mismatches, 1000u);
  std::printf("estimate: %zu of 2000 prompts off the asked length\n", mismatches);
  // The summary shows the estimate's miss: the same mismatch count as the
  // details, counter "estimate", and no warning (the estimate claims no
  // exact length).
  const auto summary = Summary(folder, "synthetic");
  ASSERT_TRUE(summary.contains("input_lengths"));
  EXPECT_EQ(summary["input_lengths"]["counter"], "estimate");
  EXPECT_EQ(summary["input_lengths"]["mismatches"].get<size_t>(), mismatches);
  EXPECT_EQ(r.output.find("WARNING: the server counted prompts"), std::string::npos);
}

TEST(TokenLengthsEndToEndTest, ASentencePieceModelCountsAsTheServerWithThatModel) {
  const fs::path out = AbsentDir("surge_tok_spm");
  const fs::path model = TrainModel(out / "model");
  ASSERT_FALSE(model.empty()) << "spm_train failed";
  const Result r = RunSurge(std::string(kSynthetic) + "--endpoint /v1/completions --tokenizer " +
                            model.string() + " --sim-tokenizer-model " + model.string() +
                            " --output-dir " + (out / "runs").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto details = Details(ResultsFolder(r.output), "synthetic");
  ASSERT_EQ(details.size(), 2000u);
  EXPECT_EQ(Mismatches(details, "sentencepiece"), 0u);
}

TEST(TokenLengthsEndToEndTest, MooncakePromptsAreTheirTracesInputLength) {
  const fs::path out = AbsentDir("surge_tok_mooncake");
  const fs::path trace =
      fs::path(SURGE_SOURCE_DIR) / "data/traces/mooncake_conversation_trace.jsonl";
  const Result r = RunSurge("run --dataset-name mooncake --dataset-path " + trace.string() +
                                " --num-prompts 500 --request-rate 250 --workers 1 "
                                "--sim-ttft-ms 1 --sim-itl-ms 0 --tokenizer server --output-dir " +
                                out.string(),
                            300);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<uint32_t> input_length;
  std::ifstream in(trace);
  std::string line;
  while (input_length.size() < 500 && std::getline(in, line)) {
    input_length.push_back(nlohmann::json::parse(line)["input_length"].get<uint32_t>());
  }
  const auto details = Details(ResultsFolder(r.output), "mooncake_conversation_trace");
  ASSERT_EQ(details.size(), 500u);
  for (const auto& d : details) {
    const size_t i = d["index"];
    ASSERT_LT(i, input_length.size());
    EXPECT_EQ(d["asked_input_tokens"], input_length[i]);
    EXPECT_EQ(d["input_tokens"], input_length[i]) << "line " << i + 1;
  }
}

// A server with completions and models but no tokenize endpoint (404 for
// every path but /v1/models): the run stops before its first request.
TEST(TokenLengthsEndToEndTest, AServerWithoutTokenizeStopsBeforeSending) {
  CannedServer server([](const std::string& request) {
    const std::string body = request.rfind("GET /v1/models", 0) == 0
                                 ? std::string(R"({"data":[{"id":"m"}]})")
                                 : std::string(R"({"detail":"Not Found"})");
    return std::string(request.rfind("GET /v1/models", 0) == 0 ? "HTTP/1.1 200 OK"
                                                                  : "HTTP/1.1 404 Not Found") +
           "\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  });
  const fs::path out = AbsentDir("surge_tok_no_endpoint");
  const Result r = RunSurge(std::string(kSynthetic) + "--tokenizer server --base-url " +
                            server.base_url() + " --output-dir " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--tokenizer server"));
  EXPECT_THAT(r.output, HasSubstr(server.base_url() + "/tokenize"));
  EXPECT_THAT(r.output, HasSubstr("vLLM/SGLang shape (HTTP 404"));
  EXPECT_THAT(r.output, HasSubstr("TGI shape (HTTP 404"));
  EXPECT_THAT(r.output, HasSubstr("llama.cpp shape (HTTP 404"));
  // Nothing was sent: only the model list and the three probes reached the
  // server, and no run folder was made.
  for (const std::string& request : server.requests()) {
    EXPECT_THAT(request, ::testing::Not(HasSubstr("/completions"))) << request;
  }
  EXPECT_TRUE(NoRunFolder(out)) << r.output;
}

TEST(TokenLengthsEndToEndTest, AFileThatIsNoModelIsRefused) {
  const fs::path out = FreshDir("surge_tok_bad_model");
  const fs::path bad = out / "not.model";
  std::ofstream(bad) << "this is not a SentencePiece model\n";
  const Result r = RunSurge(std::string(kSynthetic) + "--tokenizer " + bad.string() +
                            " --output-dir " + (out / "runs").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--tokenizer"));
  EXPECT_THAT(r.output, HasSubstr("is not a SentencePiece model"));
  EXPECT_TRUE(NoRunFolder(out / "runs")) << r.output;
}

}  // namespace
}  // namespace surge::testing
