// {dataset}_server_metrics.jsonl (docs/METRICS.md "Server telemetry"): one
// line per scrape attempt, written as the run goes (each line flushed, so
// an interrupted or killed run leaves every line written so far), and read
// back for the summary and the actual page.
#ifndef SURGE_COORDINATOR_TELEMETRY_SERVER_METRICS_FILE_H_
#define SURGE_COORDINATOR_TELEMETRY_SERVER_METRICS_FILE_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/telemetry/server_metrics.h"

namespace surge::coordinator {

// The writer. A line's t_s is relative to the run's t0, which is fixed only
// when the dispatcher starts the run: the attempts before it are held and
// written once SetT0 is called. Thread-safe.
class ServerMetricsFile {
 public:
  // Errors: INTERNAL when the file cannot be created (names path and why).
  static absl::StatusOr<std::unique_ptr<ServerMetricsFile>> Create(
      const std::filesystem::path& path);
  ~ServerMetricsFile();
  ServerMetricsFile(const ServerMetricsFile&) = delete;
  ServerMetricsFile& operator=(const ServerMetricsFile&) = delete;

  // Writes (or holds, before t0 is known) one attempt.
  void Add(const ServerMetricsSample& sample);
  // t0 on the same clock as the samples' at_ns; the first call counts.
  void SetT0(int64_t t0_ns);
  // Closes the file. Attempts still held (t0 never fixed: the run never
  // started) are left out. Errors: INTERNAL after a failed write.
  absl::Status Close();

 private:
  ServerMetricsFile(std::FILE* file, std::filesystem::path path)
      : file_(file), path_(std::move(path)) {}
  void WriteLine(const ServerMetricsSample& sample);  // under mu_

  std::mutex mu_;
  std::FILE* file_;
  const std::filesystem::path path_;
  std::optional<int64_t> t0_ns_;
  std::vector<ServerMetricsSample> held_;
  bool write_failed_ = false;
};

// The file's samples in order, without their raw series (the summary and
// the page use the mapped fields); unreadable lines (a line cut by a
// crash) are skipped and counted. Errors: NOT_FOUND when there is no file.
struct ServerMetricsRead {
  std::vector<ServerMetricsSample> samples;
  uint64_t bad_lines = 0;
};
absl::StatusOr<ServerMetricsRead> ReadServerMetricsFile(const std::filesystem::path& path);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_TELEMETRY_SERVER_METRICS_FILE_H_
