#include "common/cpu_budget.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace surge {
namespace {

absl::string_view Trimmed(std::string_view text) {
  return absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
}

std::optional<double> Ratio(std::string_view quota, std::string_view period) {
  double q = 0;
  double p = 0;
  if (!absl::SimpleAtod(Trimmed(quota), &q) || !absl::SimpleAtod(Trimmed(period), &p) || q <= 0 ||
      p <= 0) {
    return std::nullopt;
  }
  return q / p;
}

std::string CpusText(double cpus) {
  return cpus == std::floor(cpus) ? absl::StrCat(static_cast<int>(cpus))
                                  : absl::StrFormat("%.2f", cpus);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The cgroup v2 path of this process ("0::/user.slice/x.scope"), or "".
std::string CgroupV2Path() {
  std::stringstream lines(Slurp("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    if (absl::StartsWith(line, "0::")) return line.substr(3);
  }
  return "";
}

}  // namespace

std::optional<double> ParseCgroupV2CpuMax(std::string_view text) {
  const std::vector<std::string> parts = absl::StrSplit(Trimmed(text), ' ', absl::SkipEmpty());
  if (parts.size() != 2 || parts[0] == "max") return std::nullopt;
  return Ratio(parts[0], parts[1]);
}

std::optional<double> ParseCgroupV1Quota(std::string_view quota_us, std::string_view period_us) {
  return Ratio(quota_us, period_us);
}

CpuBudget BudgetFrom(const CpuSources& sources) {
  CpuBudget budget;
  budget.affinity_cpus = std::max(1, sources.affinity_cpus);
  for (const std::string& cpu_max : sources.cgroup_v2_cpu_max) {
    const std::optional<double> quota = ParseCgroupV2CpuMax(cpu_max);
    if (quota && (!budget.quota_cpus || *quota < *budget.quota_cpus)) budget.quota_cpus = quota;
  }
  if (const std::optional<double> v1 =
          ParseCgroupV1Quota(sources.cgroup_v1_quota_us, sources.cgroup_v1_period_us);
      v1 && (!budget.quota_cpus || *v1 < *budget.quota_cpus)) {
    budget.quota_cpus = v1;
  }
  budget.usable_cpus = budget.affinity_cpus;
  if (budget.quota_cpus) {
    budget.usable_cpus = std::min(
        budget.usable_cpus, std::max(1, static_cast<int>(std::ceil(*budget.quota_cpus - 1e-9))));
  }
  budget.description = absl::StrCat(
      budget.usable_cpus, budget.usable_cpus == 1 ? " usable CPU" : " usable CPUs", " (affinity ",
      budget.affinity_cpus, ", ",
      budget.quota_cpus ? absl::StrCat("cgroup quota ", CpusText(*budget.quota_cpus), " CPUs")
                        : std::string("no cgroup quota"),
      ")");
  return budget;
}

CpuSources ReadCpuSources() {
  CpuSources sources;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) sources.affinity_cpus = CPU_COUNT(&set);
  // cgroup v2: every level from this process's cgroup up to the root.
  std::string path = CgroupV2Path();
  while (!path.empty()) {
    const std::string text = Slurp("/sys/fs/cgroup" + (path == "/" ? "" : path) + "/cpu.max");
    if (!text.empty()) sources.cgroup_v2_cpu_max.push_back(text);
    if (path == "/") break;
    const size_t slash = path.find_last_of('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  sources.cgroup_v1_quota_us = Slurp("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  sources.cgroup_v1_period_us = Slurp("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  return sources;
}

WorkerChoice ChooseWorkers(const CpuBudget& budget, double peak_rate_rps) {
  const int by_cpus = std::max(1, budget.usable_cpus / kThreadsPerWorker);
  const bool instant = !(peak_rate_rps > 0) || std::isinf(peak_rate_rps);
  const int by_rate =
      instant ? by_cpus
              : std::max(1, static_cast<int>(std::ceil(peak_rate_rps / kWorkerCapacityRps)));
  WorkerChoice choice;
  choice.workers = std::min(by_cpus, by_rate);
  const std::string rate_text =
      instant ? std::string("instant mode: as many as the CPUs allow")
              : absl::StrCat("the plan's peak ", CpusText(peak_rate_rps), " RPS needs ", by_rate,
                             " at ", kWorkerCapacityRps, " RPS per worker");
  choice.reason =
      absl::StrCat("workers: ", choice.workers, " (", budget.description, " allow ", by_cpus,
                   " of ", kThreadsPerWorker, " busy threads each, a pacer and an I/O thread; ",
                   rate_text, "; --workers N to choose)");
  if (!instant && by_rate > by_cpus) {
    choice.warning = absl::StrCat(
        "the plan's peak ", CpusText(peak_rate_rps), " RPS is more than ", choice.workers,
        choice.workers == 1 ? " worker keeps" : " workers keep", " on time (", kWorkerCapacityRps,
        " RPS each) on ", budget.description, ": expect lateness at the peak");
  }
  return choice;
}

std::string OversubscribedWarning(int workers, const CpuBudget& budget) {
  if (workers * kThreadsPerWorker <= budget.usable_cpus || workers <= 1) return "";
  return absl::StrCat(
      "--workers ", workers, " runs ", workers * kThreadsPerWorker,
      " busy threads (a spinning pacer and an I/O thread each) on ", budget.description,
      ": they take turns on the cores, and sends come late (on 2 CPUs, 2 workers at 10,000 RPS "
      "had a wire lateness p99 of 1.7-15 ms against 0.011 ms with 1; docs/PERFORMANCE.md); leave "
      "--workers out to let surge choose");
}

int64_t ThisThreadCpuNs() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void NameThisThread(const char* name) {
  char kept[16] = {};
  std::snprintf(kept, sizeof(kept), "%s", name);
  pthread_setname_np(pthread_self(), kept);
}

}  // namespace surge
