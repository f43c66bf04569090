// check_run <run folder (…/performances/{model})> <dataset>: prints the
// RunFolderReport and exits 1 when any check fails. For humans and CI logs.
#include <iostream>

#include "tests/integration/run_folder_check.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: check_run <folder> <dataset>\n";
    return 2;
  }
  const auto report = surge::testing::CheckRunFolder(argv[1], argv[2]);
  std::cout << report.Describe() << "\n";
  if (report.intended_rate_rps > 0) {
    std::cout << "achieved/intended = " << report.achieved_rate_rps / report.intended_rate_rps
              << "\n";
  }
  return report.problems.empty() ? 0 : 1;
}
