// The options of `surge coordinator`'s role and of `surge worker` come from
// their tables (proto/surge/v1/roles.proto) through TableFlags: the flags,
// defaults, bounds with errors naming the flag, required flags, the older
// spelling of a flag, and the test-only help section.
#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

#include "app/coordinator_command.h"
#include "app/run_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "surge/v1/roles.pb.h"
#include "tests/app/table_flags_command_line.h"

namespace surge::app {
namespace {

using surge::v1::CoordinatorRoleConfig;
using surge::v1::WorkerRoleConfig;
using ::testing::HasSubstr;

TEST(RoleFlagsTest, CoordinatorRoleDefaultsAndValues) {
  CoordinatorRoleConfig role;
  ASSERT_TRUE(ResolveTableFlags("--bind tcp://127.0.0.1:5555 --expect-workers 3", &role).ok());
  EXPECT_EQ(role.bind(), "tcp://127.0.0.1:5555");
  EXPECT_EQ(role.expect_workers(), 3u);
  EXPECT_EQ(role.join_timeout_s(), 60);  // default_value
  EXPECT_FALSE(role.insecure_transport());
  EXPECT_EQ(role.curve_secret_key_file(), "");
  ASSERT_TRUE(ResolveTableFlags("--bind tcp://0.0.0.0:1 --expect-workers 1024 --join-timeout 2.5 "
                                "--insecure-transport --curve-allow keys",
                                &role)
                  .ok());
  EXPECT_EQ(role.expect_workers(), 1024u);
  EXPECT_EQ(role.join_timeout_s(), 2.5);
  EXPECT_TRUE(role.insecure_transport());
  EXPECT_EQ(role.curve_allow_dir(), "keys");
}

TEST(RoleFlagsTest, CoordinatorRoleBoundsNameTheFlag) {
  CoordinatorRoleConfig role;
  const absl::Status bad =
      ResolveTableFlags("--bind tcp://127.0.0.1:1 --expect-workers 0 --join-timeout 0", &role);
  ASSERT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("  expect_workers = 0: must be 1 to 1024 (the workers to wait for) "
                        "(flag --expect-workers)"));
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("  join_timeout_s = 0: must be > 0 and at most 86400 seconds "
                        "(flag --join-timeout)"));
  EXPECT_THAT(std::string(ResolveTableFlags("--bind b --expect-workers 1025", &role).message()),
              HasSubstr("expect_workers = 1025: must be 1 to 1024"));
  EXPECT_THAT(std::string(ResolveTableFlags("--bind b --expect-workers -1", &role).message()),
              HasSubstr("(flag --expect-workers)"));
  for (const char* timeout : {"86400.5", "nan", "inf", "x"}) {
    const absl::Status s = ResolveTableFlags(
        std::string("--bind b --expect-workers 1 --join-timeout ") + timeout, &role);
    EXPECT_THAT(std::string(s.message()), HasSubstr("(flag --join-timeout)")) << timeout;
  }
  EXPECT_TRUE(ResolveTableFlags("--bind b --expect-workers 1 --join-timeout 86400", &role).ok());
}

// --worker-lease-ms / --worker-silence-ms: defaults 1000 / 1500, each
// bounded by its table entry, and the pair checked together: the silence
// must outlast the lease by a heartbeat period, or a worker declared dead
// could still send what was given to another one.
TEST(RoleFlagsTest, WorkerLeaseAndSilenceAreBoundedAndCheckedTogether) {
  CoordinatorRoleConfig role;
  ASSERT_TRUE(ResolveTableFlags("--bind b --expect-workers 1", &role).ok());
  EXPECT_EQ(role.worker_lease_ms(), 1000u);
  EXPECT_EQ(role.worker_silence_ms(), 1500u);
  EXPECT_TRUE(CheckLiveness(role).ok());
  EXPECT_THAT(
      std::string(
          ResolveTableFlags("--bind b --expect-workers 1 --worker-lease-ms 299", &role).message()),
      HasSubstr("worker_lease_ms = 299: must be 300 to 60000 ms (flag --worker-lease-ms)"));
  EXPECT_THAT(
      std::string(ResolveTableFlags("--bind b --expect-workers 1 --worker-silence-ms 120001", &role)
                      .message()),
      HasSubstr("worker_silence_ms = 120001: must be 500 to 120000 ms (flag --worker-silence-ms)"));
  ASSERT_TRUE(
      ResolveTableFlags(
          "--bind b --expect-workers 1 --worker-lease-ms 3000 --worker-silence-ms 3249", &role)
          .ok());
  const absl::Status pair = CheckLiveness(role);
  ASSERT_EQ(pair.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pair.message(),
            "--worker-silence-ms 3249: must be at least --worker-lease-ms (3000) + 250 ms, or a "
            "worker declared dead could still send requests given to another one");
  role.set_worker_silence_ms(3250);
  EXPECT_TRUE(CheckLiveness(role).ok());
}

TEST(RoleFlagsTest, RequiredRoleFlagsStopTheParse) {
  CoordinatorRoleConfig role;
  try {
    (void)ResolveTableFlags("--expect-workers 2", &role);
    ADD_FAILURE() << "no error without --bind";
  } catch (const CLI::RequiredError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("--bind"));
  }
  WorkerRoleConfig worker;
  EXPECT_THROW((void)ResolveTableFlags("--worker-index 1", &worker), CLI::RequiredError);
}

TEST(RoleFlagsTest, WorkerDefaultsAliasAndTestSection) {
  WorkerRoleConfig worker;
  std::string help;
  ASSERT_TRUE(ResolveTableFlags("--connect tcp://127.0.0.1:5555", &worker, &help).ok());
  EXPECT_EQ(worker.connect(), "tcp://127.0.0.1:5555");
  EXPECT_EQ(worker.worker_index(), -1);
  EXPECT_EQ(worker.pacer_cpu(), -1);
  EXPECT_EQ(worker.parent_pid(), 0);
  EXPECT_EQ(worker.join_timeout_s(), 60);
  EXPECT_FALSE(worker.insecure_transport());
  EXPECT_EQ(worker.simulate_clock_offset_ms(), 0);
  // Both spellings of the transport bypass set the one field.
  for (const char* spelling : {"--insecure", "--insecure-transport"}) {
    WorkerRoleConfig w;
    ASSERT_TRUE(ResolveTableFlags(std::string("--connect c ") + spelling, &w).ok()) << spelling;
    EXPECT_TRUE(w.insecure_transport()) << spelling;
  }
  ASSERT_TRUE(ResolveTableFlags("--connect c --worker-index 7 --pacer-cpu 1 --pacer-realtime "
                                "--simulate-clock-offset-ms -2.5 --simulate-clock-drift-ppm 40",
                                &worker)
                  .ok());
  EXPECT_EQ(worker.worker_index(), 7);
  EXPECT_EQ(worker.pacer_cpu(), 1);
  EXPECT_TRUE(worker.pacer_realtime());
  EXPECT_EQ(worker.simulate_clock_offset_ms(), -2.5);
  EXPECT_EQ(worker.simulate_clock_drift_ppm(), 40);
  EXPECT_THAT(std::string(ResolveTableFlags("--connect c --worker-index -2", &worker).message()),
              HasSubstr("worker_index = -2: must be >= -1 (flag --worker-index)"));
  // The test-only clock flags stand in their own section of --help.
  const size_t testing = help.find("Testing");
  ASSERT_NE(testing, std::string::npos) << help;
  EXPECT_GT(help.find("--simulate-clock-offset-ms"), testing);
  EXPECT_LT(help.find("--connect"), testing);
  EXPECT_THAT(help, HasSubstr("--insecure"));
}

}  // namespace
}  // namespace surge::app
