// `surge plan` (R-UI-4): computes the plan, writes `{dataset}_plan.csv` and
// (unless instant) the expected page into a new run folder; sends nothing.
#ifndef SURGE_APP_PLAN_COMMAND_H_
#define SURGE_APP_PLAN_COMMAND_H_

#include "surge/v1/config.pb.h"

namespace surge::app {

int PlanCommand(const surge::v1::RunConfig& config);

}  // namespace surge::app

#endif  // SURGE_APP_PLAN_COMMAND_H_
