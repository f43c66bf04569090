#include "coordinator/results/server_metrics_results.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "coordinator/telemetry/server_metrics_file.h"

namespace surge::coordinator {

std::optional<ServerMetricsResults> ReadServerMetricsResults(const std::filesystem::path& folder,
                                                             const std::string& dataset,
                                                             const ServerMetricsSource& source) {
  const std::filesystem::path path = folder / ServerMetricsFileName(dataset);
  absl::StatusOr<ServerMetricsRead> read = ReadServerMetricsFile(path);
  if (!read.ok()) {
    LogWarning(absl::StrCat("server metrics: ", read.status().message(),
                            ": the summary has no server_metrics block"));
    return std::nullopt;
  }
  if (read->bad_lines > 0) {
    LogWarning(absl::StrCat(path.string(), ": ", read->bad_lines, " unreadable lines skipped"));
  }
  ServerMetricsSummary summary(source);
  ServerMetricsResults out;
  out.series.url = source.url;
  out.series.interval_s = source.interval_s;
  for (const ServerMetricsSample& s : read->samples) {
    summary.Add(s);
    const double t_s = static_cast<double>(s.at_ns) / 1e9;
    if (s.running) out.series.running.Add(t_s, *s.running);
    if (s.waiting) out.series.waiting.Add(t_s, *s.waiting);
  }
  out.summary = summary.ToJson();
  out.console_line = summary.ConsoleLine();
  return out;
}

}  // namespace surge::coordinator
