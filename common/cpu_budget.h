// The CPUs this process may use, and the local worker count `surge run`
// chooses from them (`--workers 0`, the default): each worker runs two busy
// threads (its pacer, which spins before each deadline, and its I/O thread),
// so workers beyond half the usable CPUs fight each other and the server for
// cores. Usable CPUs: the affinity mask (taskset, a container's cpuset),
// further capped by a cgroup CPU quota (a container's `--cpus`, a
// Kubernetes CPU limit), rounded up. The choice and the texts are pure; only
// ReadCpuSources reads the system.
#ifndef SURGE_COMMON_CPU_BUDGET_H_
#define SURGE_COMMON_CPU_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace surge {

// Busy threads of one local worker: the pacer and the I/O thread.
inline constexpr int kThreadsPerWorker = 2;
// Requests/s one worker keeps on time: measured on the wire on a 2-core
// machine, one worker sent constant and Poisson 10,000 RPS within 0.06 ms
// and fell behind at 20,000 RPS (docs/PERFORMANCE.md "Workers sized to the
// machine").
inline constexpr double kWorkerCapacityRps = 10000;

// What the system says, as read (ReadCpuSources) or given by a test.
struct CpuSources {
  // CPUs in the affinity mask (sched_getaffinity); 0 = unknown.
  int affinity_cpus = 0;
  // Contents of each cgroup v2 `cpu.max` from this process's cgroup up to
  // the root ("max 100000", "150000 100000"); the tightest one counts.
  std::vector<std::string> cgroup_v2_cpu_max;
  // cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` ("-1" = none);
  // empty when absent.
  std::string cgroup_v1_quota_us;
  std::string cgroup_v1_period_us;
};

struct CpuBudget {
  int affinity_cpus = 0;
  // The cgroup quota in CPUs (1.5 for "150000 100000"); none when unlimited.
  std::optional<double> quota_cpus;
  // min(affinity, ceil(quota)), at least 1.
  int usable_cpus = 1;
  // "2 CPUs (affinity 2, no cgroup quota)".
  std::string description;
};

// A quota in CPUs from cgroup v2 `cpu.max` ("QUOTA PERIOD"); none for "max"
// or text that is not two positive numbers.
std::optional<double> ParseCgroupV2CpuMax(std::string_view text);
// A quota in CPUs from cgroup v1's quota and period (µs); none for -1.
std::optional<double> ParseCgroupV1Quota(std::string_view quota_us, std::string_view period_us);

CpuBudget BudgetFrom(const CpuSources& sources);

// The affinity mask and the cgroup files of this process (/proc/self/cgroup,
// /sys/fs/cgroup). Missing files are simply absent from the result.
CpuSources ReadCpuSources();

// CPU time the calling thread has used so far (user and system), ns
// (CLOCK_THREAD_CPUTIME_ID); 0 when the system cannot say. A measurement of
// work done, not a clock to pace by.
int64_t ThisThreadCpuNs();

// Names the calling thread (up to 15 bytes kept: what top -H, perf and
// /proc/PID/task/TID/comm show), e.g. "surge-pacer", "surge-io".
void NameThisThread(const char* name);

struct WorkerChoice {
  int workers = 1;
  // The INFO line: what was chosen and why.
  std::string reason;
  // Non-empty when the plan's peak needs more workers than the CPUs allow.
  std::string warning;
};

// `--workers 0`: min(usable / kThreadsPerWorker, ceil(peak / capacity)),
// at least 1. `peak_rate_rps` is the plan's highest intended rate (0 or
// +inf: instant mode, counted as needing every worker the CPUs allow).
WorkerChoice ChooseWorkers(const CpuBudget& budget, double peak_rate_rps);

// For an explicit `--workers N`: a warning when N workers' busy threads
// outnumber the usable CPUs, naming the measured effect; empty otherwise.
std::string OversubscribedWarning(int workers, const CpuBudget& budget);

}  // namespace surge

#endif  // SURGE_COMMON_CPU_BUDGET_H_
