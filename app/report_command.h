// `surge report <run folder>`: rebuilds the summary and both pages from the
// run's files (plan CSV, details JSONL, run_config.json), also after a crash;
// planned requests without a record count as lost (R-OUT-1).
#ifndef SURGE_APP_REPORT_COMMAND_H_
#define SURGE_APP_REPORT_COMMAND_H_

#include <string>

namespace surge::app {

int ReportCommand(const std::string& folder);

}  // namespace surge::app

#endif  // SURGE_APP_REPORT_COMMAND_H_
