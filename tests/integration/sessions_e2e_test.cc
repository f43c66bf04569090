// Multi-turn sessions through the real binary against the built-in server
// (docs/SESSIONS.md): the repo's 200 ShareGPT conversations of 2–6 human
// turns, session starts at 5 RPS burstiness 0.5, exponential think times of
// mean 1 s, 2 workers. One record per human turn; every later turn sent no
// sooner than the previous answer's end plus its drawn think time; each
// turn's body (the server's request log) holds the earlier prompts and the
// server's own answers; TTFT by turn on the actual page. Then the same with
// worker 1 SIGKILLed mid-run: still exactly one record per turn, no turn
// sent twice, the lost sessions' remaining turns not_sent: session_lost.
// And bad session options: exit 2, the field named, nothing sent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;

const fs::path kSessions = fs::path(SURGE_SOURCE_DIR) / "tests/testdata/sharegpt_sessions_200.json";
// The run's file names start with the dataset file's stem.
const std::string kStem = "sharegpt_sessions_200";

std::vector<Json> JsonLines(const fs::path& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

// Each conversation's non-empty human turns, in order, counted from the
// file itself.
std::vector<std::vector<std::string>> HumanTurns(const fs::path& path) {
  std::ifstream in(path);
  const Json file = Json::parse(in);
  std::vector<std::vector<std::string>> out;
  for (const Json& c : file) {
    std::vector<std::string> turns;
    for (const Json& m : c["conversations"]) {
      const std::string from = m.value("from", "");
      const std::string value = m.value("value", "");
      if ((from == "human" || from == "user") && !value.empty()) turns.push_back(value);
    }
    out.push_back(std::move(turns));
  }
  return out;
}

// The POSTs of a sim server's request log by wire index (a second POST of
// an index is counted in `twice`).
struct Posted {
  std::map<uint64_t, Json> body_of;
  int twice = 0;
};
Posted PostsOf(const fs::path& log) {
  Posted p;
  for (const Json& j : JsonLines(log)) {
    if (j["method"] != "POST" || !j["surge_request"].is_string()) continue;
    const std::string tag = j["surge_request"].get<std::string>();  // "INDEX/ATTEMPT"
    const uint64_t index = std::stoull(tag.substr(0, tag.find('/')));
    if (p.body_of.count(index) > 0) ++p.twice;
    p.body_of[index] = Json::parse(j["body"].get<std::string>());
  }
  return p;
}

// The records of each session by turn.
std::map<uint64_t, std::map<uint32_t, Json>> BySession(const std::vector<Json>& records) {
  std::map<uint64_t, std::map<uint32_t, Json>> out;
  for (const Json& r : records) {
    if (r.value("warmup", false)) continue;
    out[r["session"].get<uint64_t>()][r["turn"].get<uint32_t>()] = r;
  }
  return out;
}

std::string Tokens(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += " tok";  // the built-in server's answer text
  return s;
}

double P99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double rank = 0.99 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

std::vector<std::string> SessionRunArgs(const std::string& port, const fs::path& out) {
  return {"run",
          "--base-url",
          "http://127.0.0.1:" + port,
          "--dataset-name",
          "sharegpt",
          "--dataset-path",
          kSessions.string(),
          "--multi-turn",
          "--num-prompts",
          "200",
          "--request-rate",
          "5",
          "--burstiness",
          "0.5",
          "--think-time-dist",
          "exponential",
          "--think-time-mean-s",
          "1",
          "--workers",
          "2",
          "--seed",
          "11",
          "--output-dir",
          out.string()};
}

SimServerProcess StartServer(const fs::path& dir) {
  return StartSimServerProcess({"--ttft-ms", "5", "--itl-ms", "1", "--request-log",
                                (dir / "requests.jsonl").string(), "--request-log-bodies"},
                               dir / "server.log");
}

// Runs surge with `args` until it exits (at most 240 s); its output.
Result RunToEnd(const std::vector<std::string>& args, const fs::path& log,
                const std::function<void(pid_t)>& meanwhile = {}) {
  const pid_t pid = SpawnSurge(args, log);
  if (meanwhile) meanwhile(pid);
  int status = 0;
  for (int i = 0; i < 2400 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(100000);
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadText(log)};
}

TEST(SessionsE2eTest, EveryHumanTurnIsSentAfterItsThinkTimeWithTheRealHistory) {
  const fs::path dir = FreshDir("surge_sessions");
  const SimServerProcess server = StartServer(dir);
  ASSERT_TRUE(SimServerUp(server));
  const Result run = RunToEnd(SessionRunArgs(server.port, dir / "out"), dir / "run.log");
  StopProcess(server.pid);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("started 200 sessions ("));
  const fs::path folder = ResultsFolder(run.output);
  const std::vector<std::vector<std::string>> human = HumanTurns(kSessions);
  ASSERT_EQ(human.size(), 200u);
  size_t turns = 0;
  for (const auto& c : human) turns += c.size();

  // One record per human turn, each OK.
  const std::vector<Json> records = JsonLines(folder / (kStem + "_details.jsonl"));
  ASSERT_EQ(records.size(), turns);
  const auto sessions = BySession(records);
  ASSERT_EQ(sessions.size(), 200u);
  std::vector<double> lateness;
  const Posted posted = PostsOf(dir / "requests.jsonl");
  EXPECT_EQ(posted.twice, 0);
  for (const auto& [s, by_turn] : sessions) {
    ASSERT_EQ(by_turn.size(), human[s].size()) << "session " << s;
    for (const auto& [t, r] : by_turn) {
      ASSERT_EQ(r["status"], "ok") << r.dump();
      lateness.push_back(r["lateness_s"].get<double>());
      if (t == 0) continue;
      // Sent no sooner than the previous answer's end plus its think time.
      const Json& prev = by_turn.at(t - 1);
      const double due = prev["actual_offset_s"].get<double>() + prev["e2el_s"].get<double>() +
                         r["think_s"].get<double>();
      EXPECT_GE(r["actual_offset_s"].get<double>(), due - 2e-6) << r.dump();
      EXPECT_NEAR(r["planned_offset_s"].get<double>(), due, 2e-6) << r.dump();
      // Its body: every earlier prompt and the server's answer to it, then
      // this turn's prompt.
      const Json& messages = posted.body_of.at(r["index"].get<uint64_t>())["messages"];
      ASSERT_EQ(messages.size(), 2 * t + 1) << r.dump();
      for (uint32_t k = 0; k < t; ++k) {
        EXPECT_EQ(messages[2 * k]["content"], human[s][k]);
        EXPECT_EQ(messages[2 * k + 1]["role"], "assistant");
        EXPECT_EQ(messages[2 * k + 1]["content"], Tokens(by_turn.at(k)["output_tokens"].get<int>()))
            << "session " << s << " turn " << t;
      }
      EXPECT_EQ(messages[2 * t]["content"], human[s][t]);
    }
  }
  EXPECT_LE(P99(lateness), 0.002);

  // The summary counts turns; the actual page has the sessions' charts.
  std::ifstream summary_in(folder / (kStem + ".json"));
  const Json summary = Json::parse(summary_in);
  EXPECT_EQ(summary["requests"]["total"], turns);
  std::ifstream page_in(folder / (kStem + "_rps_distribution_plot_with_actual_rps.json"));
  const Json page = Json::parse(page_in);
  std::set<std::string> names;
  for (const Json& trace : page["data"]) names.insert(trace.value("name", ""));
  EXPECT_TRUE(names.count("TTFT p50 by turn")) << page["data"].dump().substr(0, 400);
  EXPECT_TRUE(names.count("Turns sent (all turns)"));
}

// The pid of `surge run`'s worker child with --worker-index `index`.
pid_t WorkerChild(pid_t run, int index) {
  std::istringstream children(
      ReadText("/proc/" + std::to_string(run) + "/task/" + std::to_string(run) + "/children"));
  for (pid_t child; children >> child;) {
    std::string cmdline = ReadText("/proc/" + std::to_string(child) + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("worker --connect") != std::string::npos &&
        cmdline.find("--worker-index " + std::to_string(index) + " ") != std::string::npos) {
      return child;
    }
  }
  return -1;
}

TEST(SessionsE2eTest, AKilledWorkersSessionsEndWithOneRecordPerTurnAndNoTurnSentTwice) {
  const fs::path dir = FreshDir("surge_sessions_kill");
  const SimServerProcess server = StartServer(dir);
  ASSERT_TRUE(SimServerUp(server));
  pid_t victim = -1;
  const Result run =
      RunToEnd(SessionRunArgs(server.port, dir / "out"), dir / "run.log", [&](pid_t pid) {
        WaitForText(dir / "run.log", "started 200 sessions", 20000);
        usleep(10 * 1000 * 1000);  // ~50 sessions begun, many with turns to go
        victim = WorkerChild(pid, 1);
        if (victim > 0) kill(victim, SIGKILL);
      });
  StopProcess(server.pid);
  ASSERT_GT(victim, 0) << "worker 1 not found among surge's children";
  EXPECT_EQ(run.exit_code, 1) << run.output;  // a lost worker: incomplete numbers
  const fs::path folder = ResultsFolder(run.output);
  ASSERT_FALSE(folder.empty()) << run.output;
  const std::vector<std::vector<std::string>> human = HumanTurns(kSessions);
  size_t turns = 0;
  for (const auto& c : human) turns += c.size();

  // Exactly one record per planned turn.
  const std::vector<Json> records = JsonLines(folder / (kStem + "_details.jsonl"));
  ASSERT_EQ(records.size(), turns);
  std::set<uint64_t> indices;
  for (const Json& r : records) indices.insert(r["index"].get<uint64_t>());
  EXPECT_EQ(indices.size(), turns);
  const auto sessions = BySession(records);
  ASSERT_EQ(sessions.size(), 200u);
  for (const auto& [s, by_turn] : sessions) EXPECT_EQ(by_turn.size(), human[s].size());

  // No turn reached the server twice.
  EXPECT_EQ(PostsOf(dir / "requests.jsonl").twice, 0);

  // A lost session: after the turn that may have been in flight, every
  // turn is not_sent: session_lost; and there are such sessions.
  int session_lost = 0;
  for (const auto& [s, by_turn] : sessions) {
    bool lost_before = false;
    for (const auto& [t, r] : by_turn) {
      const std::string error = r["error"].get<std::string>();
      const bool this_lost = error.rfind("not_sent: session_lost", 0) == 0;
      session_lost += this_lost;
      if (lost_before) {
        EXPECT_TRUE(this_lost) << r.dump();
      }
      lost_before = lost_before || this_lost;
      if (this_lost) {
        EXPECT_EQ(r["worker"], 1) << r.dump();
      }
    }
  }
  EXPECT_GT(session_lost, 0) << run.output;
}

TEST(SessionsE2eTest, BadSessionOptionsExitTwoNamingTheFieldAndSendNothing) {
  const fs::path dir = FreshDir("surge_sessions_bad");
  const SimServerProcess server = StartServer(dir);
  ASSERT_TRUE(SimServerUp(server));
  const std::string target = " --base-url http://127.0.0.1:" + server.port;
  const fs::path no_human =
      fs::path(SURGE_SOURCE_DIR) / "tests/testdata/sharegpt_no_human_turn.json";
  const struct {
    std::string args;
    std::string says;
  } cases[] = {
      {"--dataset-name sharegpt --dataset-path " + no_human.string() + " --multi-turn",
       "dataset_path " + no_human.string() + ": no conversation with a human turn"},
      {"--think-time-mean-s 1 --think-time-dist exponential", "--multi-turn"},
      {"--multi-turn --max-sessions 0", "--max-sessions"},
  };
  for (const auto& c : cases) {
    const Result r = RunSurge("run --num-prompts 10 --request-rate 5 " + c.args + target +
                              " --output-dir " + (dir / "bad").string());
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.says)) << c.args << ": " << r.output;
  }
  StopProcess(server.pid);
  EXPECT_FALSE(fs::exists(dir / "bad"));
  EXPECT_TRUE(PostsOf(dir / "requests.jsonl").body_of.empty());
}

}  // namespace
}  // namespace surge::testing
