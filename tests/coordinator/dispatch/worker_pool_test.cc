// The worker pool seam (R-DIST-1): the local pool spawns the given
// executable with the worker arguments, reports exits and kills what is
// left by pid; the remote pool spawns nothing. Stand-in executables are
// small shell scripts in a temporary folder.
#include "coordinator/dispatch/worker_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class WorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("surge_pool_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // An executable script with `body`.
  std::string Script(const std::string& name, const std::string& body) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    chmod(p.c_str(), 0755);
    return p.string();
  }
  // Waits (real time, at most 10 s) until `pred` holds.
  template <typename Pred>
  bool WaitFor(Pred pred) {
    const auto give_up = RealClock().Now() + std::chrono::seconds(10);
    while (!pred()) {
      if (RealClock().Now() >= give_up) return false;
      RealClock().SleepUntilCoarse(RealClock().Now() + milliseconds(10));
    }
    return true;
  }
  fs::path dir_;
};

TEST_F(WorkerPoolTest, LocalPoolSpawnsWorkersWithTheirArgumentsAndSeesThemExit) {
  const std::string exe =
      Script("worker.sh", "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args.$5\"\nexit 7");
  LocalProcessPool pool(RealClock(), exe);
  ASSERT_TRUE(pool.Start(2, "tcp://127.0.0.1:5555").ok());
  EXPECT_EQ(pool.expected(), 2);
  EXPECT_EQ(pool.kind(), "local");
  ASSERT_TRUE(WaitFor([&] { return pool.Exited(0) && pool.Exited(1); }));
  EXPECT_EQ(pool.exit_codes(), (std::vector<int>{7, 7}));
  EXPECT_FALSE(pool.Exited(2));  // no such worker
  for (int k = 0; k < 2; ++k) {
    std::ifstream in(dir_ / ("args." + std::to_string(k)));
    std::stringstream args;
    args << in.rdbuf();
    EXPECT_EQ(args.str(), "worker\n--connect\ntcp://127.0.0.1:5555\n--worker-index\n" +
                              std::to_string(k) + "\n--parent-pid\n" + std::to_string(getpid()) +
                              "\n");
  }
}

TEST_F(WorkerPoolTest, LocalPoolStopKillsWhatIsLeftByPid) {
  LocalProcessPool pool(RealClock(), Script("hang.sh", "exec sleep 30"));
  ASSERT_TRUE(pool.Start(2, "tcp://127.0.0.1:5555").ok());
  EXPECT_FALSE(pool.Exited(0));
  const auto before = RealClock().Now();
  pool.Stop(milliseconds(100));
  EXPECT_LT(RealClock().Now() - before, std::chrono::seconds(5));  // not the 30 s sleep
  EXPECT_TRUE(pool.Exited(0));
  EXPECT_TRUE(pool.Exited(1));
  EXPECT_EQ(pool.exit_codes(), (std::vector<int>{-1, -1}));  // killed by a signal
  pool.Stop(milliseconds(0));                                // idempotent
}

TEST_F(WorkerPoolTest, LocalPoolReportsAnExecutableThatCannotStart) {
  LocalProcessPool pool(RealClock(), (dir_ / "missing").string());
  const absl::Status s = pool.Start(1, "tcp://127.0.0.1:5555");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("cannot start worker 0"));
}

TEST_F(WorkerPoolTest, RemotePoolSpawnsNothingAndExpectsJoins) {
  RemoteWorkerPool pool;
  ASSERT_TRUE(pool.Start(3, "tcp://0.0.0.0:5555").ok());
  EXPECT_EQ(pool.expected(), 3);
  EXPECT_EQ(pool.kind(), "remote");
  for (int k = 0; k < 3; ++k) EXPECT_FALSE(pool.Exited(k));
  pool.Stop(milliseconds(0));
}

}  // namespace
}  // namespace surge::coordinator
