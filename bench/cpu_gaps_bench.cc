// How much of its CPU a spinning thread keeps on this machine: the pacer's
// view of it. For each CPU surge may use, one thread pinned to it reads the
// clock in a loop for a while; a gap between two reads of at least the
// threshold is time the thread did not run (the scheduler gave the core to
// another thread, a kernel thread ran, or a VM's host took the virtual CPU).
// Per CPU: gaps by length, the longest, the share of the time lost, and the
// host's steal time over the same stretch (/proc/stat). With --fifo the
// threads run SCHED_FIFO (what --pacer-realtime asks for): gaps that remain
// then are not another thread of this machine's. With --sleep-us N the
// thread sleeps instead (clock_nanosleep to absolute deadlines N µs apart,
// no spin) and the table is its wake-up lateness: whether a pacer could
// sleep to its deadlines instead of spinning for them.
//
//   cpu_gaps_bench [--seconds S] [--threshold-us T] [--fifo] [--sleep-us N]
//
// The CPUs are measured one after another, so the others stay free.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace {

struct Options {
  double seconds = 10;
  int64_t threshold_ns = 50'000;
  bool fifo = false;
  int64_t sleep_ns = 0;  // > 0: the sleeping mode
};

// Gap classes, by their lower bound in ns (the first is the threshold).
constexpr std::array<int64_t, 5> kBoundsNs = {0, 100'000, 500'000, 1'000'000, 5'000'000};
constexpr std::array<const char*, 5> kNames = {"<0.1 ms", "0.1-0.5", "0.5-1", "1-5", ">=5 ms"};

struct CpuResult {
  int cpu = -1;
  std::string error;
  std::array<uint64_t, 5> gaps{};
  int64_t longest_ns = 0;
  int64_t lost_ns = 0;
  int64_t span_ns = 0;
  uint64_t reads = 0;
  double steal_share = -1;            // of the CPU's time, from /proc/stat; -1 unknown
  std::vector<int64_t> wake_late_ns;  // the sleeping mode: every wake-up's
};

// Steal and total jiffies of one CPU ("cpuN" line of /proc/stat).
bool ReadSteal(int cpu, uint64_t* steal, uint64_t* total) {
  std::ifstream in("/proc/stat");
  const std::string want = "cpu" + std::to_string(cpu) + " ";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(want, 0) != 0) continue;
    std::istringstream fields(line.substr(want.size()));
    uint64_t v[8] = {};
    for (uint64_t& x : v) {
      if (!(fields >> x)) break;
    }
    *total = 0;
    for (uint64_t x : v) *total += x;
    *steal = v[7];
    return true;
  }
  return false;
}

// Pins this thread to r.cpu and sets its policy; false with r.error set.
bool Place(const Options& o, CpuResult& r) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(r.cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
    r.error = "cannot pin to this CPU";
    return false;
  }
  if (o.fifo) {
    sched_param p{};
    p.sched_priority = 1;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0) {
      r.error = "SCHED_FIFO refused (needs CAP_SYS_NICE or root)";
      return false;
    }
  }
  return true;
}

void Sleep(surge::Clock& clock, const Options& o, CpuResult& r) {
  if (!Place(o, r)) return;
  const int64_t start = surge::ToNanos(clock.Now());
  const int64_t end = start + static_cast<int64_t>(o.seconds * 1e9);
  r.wake_late_ns.reserve(static_cast<size_t>((end - start) / o.sleep_ns) + 1);
  for (int64_t due = start + o.sleep_ns; due < end; due += o.sleep_ns) {
    clock.SleepUntilCoarse(surge::FromNanos(due));
    const int64_t now = surge::ToNanos(clock.Now());
    r.wake_late_ns.push_back(now - due);
    // A wake-up past the next deadlines skips them, as a pacer would not.
    if (now >= due + o.sleep_ns) due += ((now - due) / o.sleep_ns) * o.sleep_ns;
  }
  r.span_ns = surge::ToNanos(clock.Now()) - start;
}

void Spin(surge::Clock& clock, const Options& o, CpuResult& r) {
  if (!Place(o, r)) return;
  uint64_t steal0 = 0, total0 = 0, steal1 = 0, total1 = 0;
  const bool steal_known = ReadSteal(r.cpu, &steal0, &total0);
  const int64_t start = surge::ToNanos(clock.Now());
  const int64_t end = start + static_cast<int64_t>(o.seconds * 1e9);
  int64_t last = start;
  while (last < end) {
    const int64_t now = surge::ToNanos(clock.Now());
    ++r.reads;
    const int64_t gap = now - last;
    last = now;
    if (gap < o.threshold_ns) continue;
    size_t k = kBoundsNs.size() - 1;
    while (k > 0 && gap < kBoundsNs[k]) --k;
    ++r.gaps[k];
    r.lost_ns += gap;
    r.longest_ns = std::max(r.longest_ns, gap);
  }
  r.span_ns = last - start;
  if (steal_known && ReadSteal(r.cpu, &steal1, &total1) && total1 > total0) {
    r.steal_share = static_cast<double>(steal1 - steal0) / static_cast<double>(total1 - total0);
  }
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fifo") {
      o->fifo = true;
    } else if (a == "--seconds" && i + 1 < argc) {
      o->seconds = std::atof(argv[++i]);
    } else if (a == "--sleep-us" && i + 1 < argc) {
      o->sleep_ns = static_cast<int64_t>(std::atof(argv[++i]) * 1000);
    } else if (a == "--threshold-us" && i + 1 < argc) {
      o->threshold_ns = static_cast<int64_t>(std::atof(argv[++i]) * 1000);
    } else {
      std::fprintf(stderr,
                   "usage: cpu_gaps_bench [--seconds S] [--threshold-us T] [--fifo] "
                   "[--sleep-us N]\n");
      return false;
    }
  }
  if (!(o->seconds > 0 && o->seconds <= 600) || o->threshold_ns < 1000 || o->sleep_ns < 0 ||
      (o->sleep_ns > 0 && o->sleep_ns < 1000)) {
    std::fprintf(stderr,
                 "--seconds must be in (0, 600], --threshold-us and --sleep-us at least 1\n");
    return false;
  }
  return true;
}

int64_t Rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1,
                         static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

void PrintSleeps(const Options& o, std::vector<CpuResult>& results) {
  std::printf("sleeping thread per CPU, %.1f s each, deadlines %.3f ms apart, %s\n", o.seconds,
              static_cast<double>(o.sleep_ns) / 1e6, o.fifo ? "SCHED_FIFO" : "SCHED_OTHER");
  std::printf("%-4s %9s %12s %12s %12s %12s %12s\n", "cpu", "wakes", "p50 (us)", "p99 (us)",
              "p99.9 (us)", "max (us)", ">= thr");
  for (CpuResult& r : results) {
    if (!r.error.empty()) {
      std::printf("%-4d %s\n", r.cpu, r.error.c_str());
      continue;
    }
    std::vector<int64_t>& v = r.wake_late_ns;
    std::sort(v.begin(), v.end());
    const auto over =
        static_cast<size_t>(v.end() - std::lower_bound(v.begin(), v.end(), o.threshold_ns));
    std::printf("%-4d %9zu %12.1f %12.1f %12.1f %12.1f %12zu\n", r.cpu, v.size(),
                static_cast<double>(Rank(v, 0.5)) / 1e3, static_cast<double>(Rank(v, 0.99)) / 1e3,
                static_cast<double>(Rank(v, 0.999)) / 1e3,
                static_cast<double>(v.empty() ? 0 : v.back()) / 1e3, over);
  }
}

void Print(const Options& o, const std::vector<CpuResult>& results) {
  std::printf("spinning thread per CPU, %.1f s each, gaps >= %.3f ms, %s\n", o.seconds,
              static_cast<double>(o.threshold_ns) / 1e6, o.fifo ? "SCHED_FIFO" : "SCHED_OTHER");
  std::printf("%-4s", "cpu");
  for (const char* n : kNames) std::printf(" %9s", n);
  std::printf(" %12s %9s %9s %12s\n", "longest (ms)", "lost (%)", "steal (%)", "reads/s");
  for (const CpuResult& r : results) {
    if (!r.error.empty()) {
      std::printf("%-4d %s\n", r.cpu, r.error.c_str());
      continue;
    }
    std::printf("%-4d", r.cpu);
    for (uint64_t g : r.gaps) std::printf(" %9llu", static_cast<unsigned long long>(g));
    const double span = static_cast<double>(std::max<int64_t>(r.span_ns, 1));
    std::printf(" %12.3f %9.2f", static_cast<double>(r.longest_ns) / 1e6,
                100.0 * static_cast<double>(r.lost_ns) / span);
    if (r.steal_share >= 0) {
      std::printf(" %9.2f", 100.0 * r.steal_share);
    } else {
      std::printf(" %9s", "?");
    }
    std::printf(" %12.0f\n", static_cast<double>(r.reads) / (span / 1e9));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    std::perror("sched_getaffinity");
    return 1;
  }
  surge::Clock& clock = surge::RealClock();
  std::vector<CpuResult> results;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CpuResult r;
    r.cpu = cpu;
    std::thread t = clock.StartThread([&] {
      if (o.sleep_ns > 0) {
        Sleep(clock, o, r);
      } else {
        Spin(clock, o, r);
      }
    });
    clock.Join(t);
    results.push_back(std::move(r));
  }
  if (o.sleep_ns > 0) {
    PrintSleeps(o, results);
  } else {
    Print(o, results);
  }
  return 0;
}
