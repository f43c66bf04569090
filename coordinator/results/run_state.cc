#include "coordinator/results/run_state.h"

#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "coordinator/results/summary.h"  // WriteTextFile
#include "nlohmann/json.hpp"

namespace surge::coordinator {

namespace fs = std::filesystem;

std::string RunStateJson(const RunStateMark& mark) {
  nlohmann::json j;
  j["state"] = mark.state;
  j["elapsed_s"] = mark.elapsed_s;
  if (mark.no_send_after_s >= 0) j["no_send_after_s"] = mark.no_send_after_s;
  j["records"] = mark.records;
  if (!mark.stop_reason.empty()) j["stop_reason"] = mark.stop_reason;
  return j.dump(2) + "\n";
}

absl::StatusOr<RunStateMark> ReadRunState(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no ", path.string()));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  RunStateMark mark;
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string() ||
      !j.contains("elapsed_s") || !j["elapsed_s"].is_number()) {
    return absl::DataLossError(absl::StrCat("cannot read ", path.string()));
  }
  mark.state = j["state"].get<std::string>();
  mark.elapsed_s = j["elapsed_s"].get<double>();
  if (j.contains("no_send_after_s") && j["no_send_after_s"].is_number()) {
    mark.no_send_after_s = j["no_send_after_s"].get<double>();
  }
  if (j.contains("records") && j["records"].is_number_unsigned()) {
    mark.records = j["records"].get<uint64_t>();
  }
  if (j.contains("stop_reason") && j["stop_reason"].is_string()) {
    mark.stop_reason = j["stop_reason"].get<std::string>();
  }
  return mark;
}

RunStateWriter::RunStateWriter(fs::path folder, uint32_t lease_ms, double period_s)
    : path_(std::move(folder) / "run_state.json"),
      lease_s_(lease_ms / 1000.0),
      period_s_(period_s) {}

void RunStateWriter::Waiting() {
  RunStateMark mark;
  mark.state = "waiting_for_workers";
  Write(mark);
}

void RunStateWriter::Update(double elapsed_s, bool stopping, uint64_t records) {
  const bool changed = !started_ || stopping != stopping_;
  if (!changed && elapsed_s < last_elapsed_s_ + period_s_) return;
  started_ = true;
  stopping_ = stopping;
  last_elapsed_s_ = elapsed_s;
  RunStateMark mark;
  mark.state = stopping ? "stopping" : "running";
  mark.elapsed_s = elapsed_s;
  mark.no_send_after_s = elapsed_s + period_s_ + lease_s_ + kMarginS;
  mark.records = records;
  Write(mark);
}

void RunStateWriter::Ended(const std::string& stop_reason, uint64_t records) {
  RunStateMark mark;
  mark.state = "ended";
  mark.elapsed_s = last_elapsed_s_;
  mark.records = records;
  mark.stop_reason = stop_reason;
  Write(mark);
}

void RunStateWriter::NeverStarted(const std::string& why) {
  if (started_) return;
  RunStateMark mark;
  mark.state = "never_started";
  mark.stop_reason = why;
  Write(mark);
}

void RunStateWriter::Write(const RunStateMark& mark) {
  fs::path next = path_;
  next += ".next";
  absl::Status s = WriteTextFile(RunStateJson(mark), next);
  std::error_code ec;
  if (s.ok()) fs::rename(next, path_, ec);
  if ((!s.ok() || ec) && !write_failed_) {
    write_failed_ = true;  // said once: the run goes on without its mark
    LogWarning(absl::StrCat("cannot write ", path_.string(),
                            ": `surge report` after a crash will count every request without a "
                            "record as lost"));
  }
}

}  // namespace surge::coordinator
