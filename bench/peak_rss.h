// Peak resident set size of this process, for the benchmarks' memory
// figures (docs/PERFORMANCE.md).
#ifndef SURGE_BENCH_PEAK_RSS_H_
#define SURGE_BENCH_PEAK_RSS_H_

#include <cstdlib>
#include <fstream>
#include <string>

namespace surge::bench {

// VmHWM (the peak resident set) of the calling process from
// /proc/self/status, MB (2^20 bytes); -1 when unreadable. In a forked child
// it is the child's own peak.
inline double PeakRssMb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return -1;
}

}  // namespace surge::bench

#endif  // SURGE_BENCH_PEAK_RSS_H_
