#include "app/plan_command.h"

#include <iostream>
#include <string>

#include "app/exit_codes.h"
#include "app/prepare.h"
#include "common/log.h"

namespace surge::app {

using coordinator::Anomaly;
using surge::v1::RunConfig;

int PlanCommand(const RunConfig& config) {
  const std::string model = !config.target().model().empty()     ? config.target().model()
                            : config.target().base_url().empty() ? "surge-sim"
                                                                 : "model";
  int code = kExitOk;
  if (config.metrics_port() > 0) {
    LogWarning(
        "--metrics-port is unused by surge plan: nothing is sent, so there are no live "
        "metrics (surge run and surge coordinator serve them)");
  }
  // Saved as given: the folder's placeholder model name is not a setting.
  auto prepared = Prepare(config, model, config, &code);
  if (!prepared.ok()) return Fail(prepared.status(), code);
  const Prepared& p = *prepared;
  std::cout << "plan: " << p.plan.size() << " requests (normal " << p.plan.Count(Anomaly::kNormal)
            << ", timing anomalies " << p.plan.Count(Anomaly::kTiming) << ", burstiness anomalies "
            << p.plan.Count(Anomaly::kBurstiness) << ")\n"
            << "seed: " << config.seed() << "\n"
            << "results: " << p.folder.string() << "\n";
  return kExitOk;
}

}  // namespace surge::app
