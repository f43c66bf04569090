#include "app/compare_command.h"

#include <filesystem>
#include <iostream>

#include "app/exit_codes.h"
#include "coordinator/capacity/compare_runs.h"
#include "coordinator/report/compare_page.h"

namespace surge::app {

namespace fs = std::filesystem;

int CompareCommand(const CompareOptions& options) {
  coordinator::CompareSettings settings;
  settings.bootstrap.resamples = options.bootstrap_resamples;
  settings.bootstrap.seed = options.seed;
  settings.min_pairs = options.min_pairs;
  absl::StatusOr<coordinator::Comparison> c =
      coordinator::CompareRunFolders(options.a_folder, options.b_folder, settings);
  if (!c.ok()) return ExitWith(c.status());

  const fs::path dir = options.output_dir.empty()
                           ? coordinator::DefaultCompareDir(options.a_folder, options.b_folder)
                           : fs::path(options.output_dir);
  std::cout << "A: " << options.a_folder << "\nB: " << options.b_folder << "\n"
            << coordinator::ComparisonTable(*c);
  if (absl::Status s = coordinator::WriteComparisonJson(*c, dir); !s.ok()) return ExitWith(s);
  if (absl::Status s = coordinator::WriteComparePage(*c, dir / "compare.html"); !s.ok()) {
    return ExitWith(s);
  }
  std::cout << "compare.json: " << (dir / "compare.json").string()
            << "\ncompare page: " << (dir / "compare.html").string() << "\n";
  return c->has_verdict ? kExitOk : kExitFailure;
}

}  // namespace surge::app
