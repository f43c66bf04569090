// API keys never appear in logs or output files (R-REQ-1):
// a distinctive key is planted through --api-key-file and through
// $OPENAI_API_KEY, `surge run` runs with debug logging, and every file the
// run wrote and the whole console output are searched for it. The key only
// ever reaches surge through a file or the environment, never argv (the
// command lines below hold only the key file's path). All traffic on
// 127.0.0.1; every run bounded by `timeout`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/surge_process.h"
#include "tests/worker/http/canned_server.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Distinctive, so a hit cannot be a coincidence; the middle part alone is
// searched too, to catch a key that was cut or partly masked.
constexpr const char* kPlantedKey = "sk-surgeLEAKCANARY-7f3a9c1e5b2d4086-END";
constexpr const char* kKeyCore = "LEAKCANARY-7f3a9c1e5b2d4086";

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every regular file under `dir` that holds the key core, and how many files
// were searched (so an empty folder cannot pass).
std::vector<std::string> FilesHoldingTheKey(const fs::path& dir, int* searched) {
  std::vector<std::string> hits;
  *searched = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    ++*searched;
    if (Slurp(entry.path()).find(kKeyCore) != std::string::npos) {
      hits.push_back(entry.path().string());
    }
  }
  return hits;
}

// Sets an environment variable for one scope (the surge child inherits it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void ExpectNoLeak(const Result& r, const fs::path& out) {
  EXPECT_THAT(r.output, Not(HasSubstr(kKeyCore))) << r.output;
  int searched = 0;
  const std::vector<std::string> hits = FilesHoldingTheKey(out, &searched);
  EXPECT_TRUE(hits.empty()) << "the API key is in: " << ::testing::PrintToString(hits);
  // The run folder holds at least the plan, the details, the summary, the
  // configuration and the pages.
  EXPECT_GE(searched, 5) << "too few output files to search under " << out;
}

constexpr const char* kRunArgs =
    "run --num-prompts 20 --request-rate 40 --workers 2 --random-input-len 16 "
    "--random-output-len 4 --sim-ttft-ms 1 --sim-itl-ms 1 ";

TEST(SecretsTest, KeyFromAFileIsInNoOutputFileAndNotOnTheConsole) {
  const fs::path out = AbsentDir("surge_secrets_file");
  const fs::path key_dir = FreshDir("surge_secrets_file_key");
  const fs::path key_file = key_dir / "api.key";
  std::ofstream(key_file) << kPlantedKey << "\n";
  ScopedEnv debug("SURGE_LOG_LEVEL", "debug");
  const Result r = RunSurge(std::string(kRunArgs) + "--api-key-file " + key_file.string() +
                                " --output-dir " + out.string(),
                            /*timeout_s=*/120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("results: "));
  ExpectNoLeak(r, out);
  // The file's path is what surge keeps (run_config.json), not its content.
  EXPECT_THAT(Slurp(ResultsFolder(r.output) / "run_config.json"), HasSubstr("api.key"));
}

TEST(SecretsTest, KeyFromTheEnvironmentIsInNoOutputFileAndNotOnTheConsole) {
  const fs::path out = AbsentDir("surge_secrets_env");
  ScopedEnv key("OPENAI_API_KEY", kPlantedKey);
  ScopedEnv debug("SURGE_LOG_LEVEL", "debug");
  const Result r = RunSurge(std::string(kRunArgs) + "--output-dir " + out.string(),
                            /*timeout_s=*/120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectNoLeak(r, out);
}

// Real servers echo a wrong key back (OpenAI: "Incorrect API key provided:
// sk-..."). A server that does so in its 401 body and in an error event must
// not carry the key into the records, the pages or the console.
TEST(SecretsTest, KeyEchoedBackByTheServerIsNotRecorded) {
  std::atomic<int> posts{0};
  std::atomic<int> with_key{0};
  const std::string echoed = std::string("Incorrect API key provided: ") + kPlantedKey;
  CannedServer server([&](const std::string& request) {
    if (request.find(std::string("Authorization: Bearer ") + kPlantedKey) != std::string::npos) {
      ++with_key;
    }
    if (request.rfind("GET ", 0) == 0) return HttpAnswer(200, "OK", R"({"data":[{"id":"m"}]})");
    const int n = posts++;
    if (n % 2 == 0) {
      return HttpAnswer(
          401, "Unauthorized",
          R"({"error":{"message":")" + echoed + R"(","type":"invalid_request_error"}})");
    }
    return std::string(
               "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n") +
           "data: {\"error\":{\"message\":\"" + echoed + "\"}}\n\n";
  });
  const fs::path out = AbsentDir("surge_secrets_echo");
  ScopedEnv key("OPENAI_API_KEY", kPlantedKey);
  ScopedEnv debug("SURGE_LOG_LEVEL", "debug");
  const Result r = RunSurge("run --base-url " + server.base_url() +
                                " --model m --num-prompts 6 --request-rate 20 --workers 1 "
                                "--random-input-len 16 --random-output-len 4 --output-dir " +
                                out.string(),
                            /*timeout_s=*/60);
  // Every request failed, so the exit code says so; what matters is below.
  EXPECT_THAT(r.output, HasSubstr("results: ")) << r.output;
  EXPECT_EQ(posts.load(), 6) << r.output;
  // The key did reach the server (so there was something to leak) ...
  EXPECT_GE(with_key.load(), 6);
  // ... and the server's words are kept, with the key masked.
  const std::string details = Slurp(ResultsFolder(r.output) / "synthetic_details.jsonl");
  EXPECT_THAT(details, HasSubstr("Incorrect API key provided: [API key redacted]")) << details;
  ExpectNoLeak(r, out);
}

// The same echo from /v1/models (asked when no --model is given) ends the
// run with an error on the console: the key is not in it either.
TEST(SecretsTest, KeyEchoedByTheModelListIsNotOnTheConsole) {
  std::atomic<int> gets{0};
  CannedServer server([&](const std::string& request) {
    if (request.rfind("GET ", 0) == 0) ++gets;
    return HttpAnswer(401, "Unauthorized",
                      std::string(R"({"error":{"message":"Incorrect API key provided: )") +
                          kPlantedKey + R"("}})");
  });
  const fs::path out = AbsentDir("surge_secrets_models");
  ScopedEnv key("OPENAI_API_KEY", kPlantedKey);
  const Result r =
      RunSurge("run --base-url " + server.base_url() +
                   " --num-prompts 3 --request-rate 20 --workers 1 --output-dir " + out.string(),
               /*timeout_s=*/60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_GE(gets.load(), 1);
  EXPECT_THAT(r.output, HasSubstr("HTTP 401"));
  EXPECT_THAT(r.output, HasSubstr("[API key redacted]"));
  EXPECT_THAT(r.output, Not(HasSubstr(kKeyCore))) << r.output;
  if (fs::exists(out)) {
    int searched = 0;
    EXPECT_TRUE(FilesHoldingTheKey(out, &searched).empty());
  }
}

}  // namespace
}  // namespace surge::testing
