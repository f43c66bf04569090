// Writes the sample sweep's page for tests/browser/sweep_page.test.mjs:
//   write_sample_sweep_page <dir>   → <dir>/sweep.html and <dir>/sweep.json
// The sample (tests/testing/sample_sweep.h) has an ok, an invalid and a
// saturated point, and a peak waiting queue for the last two.
#include <fstream>
#include <iostream>

#include "coordinator/report/sweep_page.h"
#include "tests/testing/sample_sweep.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_sample_sweep_page DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  surge::coordinator::SweepReport report = surge::testing::SampleSweepReport();
  report.points[1].peak_waiting = 3;
  report.points[2].peak_waiting = 212;
  const nlohmann::json sweep = surge::coordinator::SweepJson(report);
  if (absl::Status s = surge::coordinator::WriteSweepPage(sweep, dir / "sweep.html"); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 1;
  }
  std::ofstream(dir / "sweep.json") << sweep.dump(2) << "\n";
  return 0;
}
