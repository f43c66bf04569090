#include "coordinator/telemetry/server_metrics_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace surge::coordinator {

absl::StatusOr<std::unique_ptr<ServerMetricsFile>> ServerMetricsFile::Create(
    const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path.string(), ": ", std::strerror(errno)));
  }
  return std::unique_ptr<ServerMetricsFile>(new ServerMetricsFile(file, path));
}

ServerMetricsFile::~ServerMetricsFile() { Close().IgnoreError(); }

void ServerMetricsFile::Add(const ServerMetricsSample& sample) {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return;
  if (!t0_ns_) {
    held_.push_back(sample);
    return;
  }
  WriteLine(sample);
}

void ServerMetricsFile::SetT0(int64_t t0_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (t0_ns_) return;
  t0_ns_ = t0_ns;
  for (const ServerMetricsSample& s : held_) WriteLine(s);
  held_.clear();
}

void ServerMetricsFile::WriteLine(const ServerMetricsSample& sample) {
  if (file_ == nullptr) return;
  const std::string line = ServerMetricsLine(sample, *t0_ns_) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    write_failed_ = true;
  }
}

absl::Status ServerMetricsFile::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return absl::OkStatus();
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  held_.clear();
  if (write_failed_ || !closed) {
    return absl::InternalError(absl::StrCat("cannot write ", path_.string(),
                                            ": some server metrics lines may be missing"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ServerMetricsRead> ReadServerMetricsFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no ", path.string()));
  ServerMetricsRead read;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    absl::StatusOr<ServerMetricsSample> s = ParseServerMetricsLine(line);
    if (!s.ok()) {
      ++read.bad_lines;
      continue;
    }
    s->raw.clear();
    read.samples.push_back(*std::move(s));
  }
  return read;
}

}  // namespace surge::coordinator
