// The worker's own lateness window (worker/send_health.h):
// exact percentiles over the sends of the last window, counters as their
// increase over it, errors classified by their system text.
#include "worker/send_health.h"

#include <gtest/gtest.h>

namespace surge::worker {
namespace {

constexpr int64_t kMs = 1000 * 1000;
constexpr int64_t kS = 1000 * kMs;

TEST(SendHealthTest, WindowPercentilesAndCounterIncreases) {
  HealthTotals start;
  start.connects = 5;
  start.connect_ns = 7 * kMs;
  start.cpu_ns = 100 * kMs;
  start.host_busy = 1000;
  start.host_total = 4000;
  SendHealth h(10 * kS, start);
  // 1..100 µs late, one per 10 ms from 10 s.
  for (int i = 1; i <= 100; ++i) h.OnSend(10 * kS + i * 10 * kMs, i * 1000);
  h.OnLateWake(10 * kS + 200 * kMs, 80 * 1000);
  h.OnLateWake(10 * kS + 700 * kMs, 2 * kMs);
  h.OnGateWait();
  h.OnGateWait();
  h.OnRecordError("connect: Too many open files");
  h.OnRecordError("connect: Too many open files in system");
  h.OnRecordError("connect: Connection refused");
  h.OnRecordError("http_500");
  h.OnRecordError("");
  HealthTotals now = start;
  now.connects = 25;
  now.connect_ns = 47 * kMs;
  now.cpu_ns = 600 * kMs;
  now.host_busy = 1150;
  now.host_total = 4200;
  surge::v1::SendHealth r = h.Report(11 * kS, now, 3 * kMs);
  EXPECT_EQ(r.window_ns(), kS);
  EXPECT_EQ(r.sends(), 100u);
  // Linear interpolation between closest ranks: p50 of 1..100 µs = 50.5 µs,
  // p99 = 99.01 µs.
  EXPECT_EQ(r.lateness_p50_ns(), 50500);
  EXPECT_EQ(r.lateness_p99_ns(), 99010);
  EXPECT_EQ(r.lateness_max_ns(), 100000);
  EXPECT_EQ(r.overdue_ns(), 3 * kMs);
  EXPECT_EQ(r.gate_waits(), 2u);
  EXPECT_EQ(r.fd_errors(), 2u);
  EXPECT_EQ(r.refused(), 1u);
  EXPECT_EQ(r.pacer_late_wakes(), 2u);
  EXPECT_EQ(r.pacer_late_wake_max_ns(), 2 * kMs);
  EXPECT_EQ(r.pacer_late_wake_ns(), 2 * kMs + 80 * 1000);
  EXPECT_EQ(r.connects(), 20u);
  EXPECT_EQ(r.connect_ns(), 40 * kMs);
  EXPECT_EQ(r.cpu_ns(), 500 * kMs);
  EXPECT_DOUBLE_EQ(r.host_busy(), 150.0 / 200.0);

  // Reports every 250 ms: each covers from the latest report at least 1 s
  // old, so the sends of 10.0–11.0 s drop out once it is past.
  for (int64_t t = 11 * kS + 250 * kMs; t <= 12 * kS; t += 250 * kMs) r = h.Report(t, now, 0);
  EXPECT_EQ(r.window_ns(), kS);  // from the 11.0 s report
  EXPECT_EQ(r.sends(), 0u);
  EXPECT_EQ(r.lateness_p99_ns(), 0);
  EXPECT_EQ(r.gate_waits(), 0u);
  EXPECT_EQ(r.pacer_late_wakes(), 0u);
  EXPECT_EQ(r.pacer_late_wake_max_ns(), 0);  // the 2 ms one dropped out too
  EXPECT_EQ(r.connects(), 0u);
  EXPECT_DOUBLE_EQ(r.host_busy(), -1);  // no host time passed: unknown
  h.OnSend(12 * kS + 100 * kMs, 5 * kMs);
  h.OnLateWake(12 * kS + 100 * kMs, 4 * kMs);
  r = h.Report(12 * kS + 250 * kMs, now, 0);
  EXPECT_EQ(r.window_ns(), kS);
  EXPECT_EQ(r.sends(), 1u);
  EXPECT_EQ(r.lateness_p99_ns(), 5 * kMs);
  EXPECT_EQ(r.pacer_late_wakes(), 1u);
  EXPECT_EQ(r.pacer_late_wake_max_ns(), 4 * kMs);
}

TEST(SendHealthTest, KeepsAtMostMaxSamplesButCountsEverySend) {
  SendHealth h(0, {}, std::chrono::seconds(1), /*max_samples=*/10);
  for (int i = 0; i < 50; ++i) h.OnSend(i * kMs, i < 40 ? 0 : 9 * kMs);
  const surge::v1::SendHealth r = h.Report(100 * kMs, {}, 0);
  EXPECT_EQ(r.sends(), 50u);
  EXPECT_EQ(r.lateness_p50_ns(), 9 * kMs);  // the 10 newest: all 9 ms late
}

TEST(SendHealthTest, ErrorTextsAndTheSystemReaders) {
  EXPECT_TRUE(IsDescriptorError("connect: Too many open files"));
  EXPECT_FALSE(IsDescriptorError("connect: Connection refused"));
  EXPECT_TRUE(IsRefusedError("connect: Connection refused"));
  EXPECT_FALSE(IsRefusedError("timeout"));
  const int64_t a = ProcessCpuNs();
  volatile double x = 0;
  for (int i = 0; i < 2000000; ++i) x = x + i;
  EXPECT_GT(ProcessCpuNs(), a);
  HealthTotals t;
  ReadHostCpu(t);
  EXPECT_GT(t.host_total, 0u);  // Linux: /proc/stat
  EXPECT_LE(t.host_busy, t.host_total);
}

}  // namespace
}  // namespace surge::worker
