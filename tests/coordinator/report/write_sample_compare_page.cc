// Writes sample compare pages for the browser test
// (tests/browser/compare_page.test.mjs):
//   write_sample_compare_page <dir>
// writes <dir>/verdict/compare.html (300 pairs, B's TTFT 40 ms above A's,
// both schedules kept) and <dir>/no_verdict/compare.html (the same pairs,
// B's certificate failed). Exit status 1 on any error.
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "coordinator/capacity/compare_runs.h"
#include "coordinator/report/compare_page.h"

namespace {

using surge::coordinator::ComparedRun;
using surge::coordinator::RequestTimes;

// 300 requests 20 ms apart: TTFT `ttft_ms` ± 3 ms, TPOT 2 ms ± 0.2, E2EL
// TTFT + 254 ms ± 5; a fixed seed per side.
std::vector<RequestTimes> SampleRequests(double ttft_ms, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, 1);
  std::vector<RequestTimes> out;
  for (int k = 0; k < 300; ++k) {
    RequestTimes r;
    r.index = static_cast<uint64_t>(k);
    r.planned_offset_s = 0.02 * k;
    r.ok = k != 17;  // one failed request in each run
    r.ms[0] = ttft_ms + 3 * n(rng);
    r.ms[1] = 2 + 0.2 * n(rng);
    r.ms[2] = r.ms[0] + 254 + 5 * n(rng);
    out.push_back(r);
  }
  return out;
}

ComparedRun SampleRun(const char* folder, bool kept) {
  ComparedRun r;
  r.folder = folder;
  r.dataset = "synthetic";
  r.plan_hash = "0123456789abcdef";
  r.plan_hash_source = "summary";
  r.certificate.valid = kept;
  r.certificate.intended_rate_rps = 50;
  r.certificate.achieved_rate_rps = kept ? 49.98 : 41.2;
  r.certificate.achieved_vs_intended = r.certificate.achieved_rate_rps / 50;
  r.certificate.lateness_p99_ms = kept ? 0.4 : 31.5;
  r.certificate.lateness_limit_ms = 10;
  r.certificate.ks_distance = 0.52;
  r.certificate.ks_critical = 0.111;
  r.certificate.stop_reason = "completed";
  r.certificate.sent = r.certificate.planned = 300;
  if (!kept) {
    r.certificate.reasons = {
        "send lateness p99 31.5 ms is over the limit 10 ms (the default: "
        "the lateness alarm was off)"};
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_sample_compare_page <dir>\n");
    return 1;
  }
  const std::filesystem::path dir = argv[1];
  const auto a = SampleRequests(20, 1);
  const auto b = SampleRequests(60, 2);
  for (const bool kept : {true, false}) {
    const auto c = surge::coordinator::CompareRequests(SampleRun("/runs/a", true),
                                                       SampleRun("/runs/b", kept), a, b, {});
    const auto path = dir / (kept ? "verdict" : "no_verdict") / "compare.html";
    if (absl::Status s = surge::coordinator::WriteComparePage(c, path); !s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::printf("%s\n", path.c_str());
  }
  return 0;
}
