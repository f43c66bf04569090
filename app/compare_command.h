// `surge compare A B`: two runs of the same plan compared request by
// request (docs/COMPARE.md); the console table, compare.json and
// compare.html.
#ifndef SURGE_APP_COMPARE_COMMAND_H_
#define SURGE_APP_COMPARE_COMMAND_H_

#include <cstdint>
#include <string>

namespace surge::app {

// The command's flags (declared in main.cc).
struct CompareOptions {
  std::string a_folder;
  std::string b_folder;
  // Where compare.json and compare.html go; empty: DefaultCompareDir.
  std::string output_dir;
  // Bootstrap resamples (100..100000) and the seed of its generator.
  uint32_t bootstrap_resamples = 2000;
  uint64_t seed = 0;
  // Fewer requests ok in both runs than this: no verdict.
  uint64_t min_pairs = 30;
};

// Returns 0 with a verdict; 1 without one (a run did not keep its
// schedule, too few pairs: the files are written and say why); 2 when the
// plans differ or a folder is not a run folder (nothing written).
int CompareCommand(const CompareOptions& options);

}  // namespace surge::app

#endif  // SURGE_APP_COMPARE_COMMAND_H_
