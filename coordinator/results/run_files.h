// The run folder and the files in it that are not pages (R-PLOT-1, R-OUT-1,
// R-OUT-2): folder layout, the plan CSV and the per-request details JSONL.
#ifndef SURGE_COORDINATOR_RESULTS_RUN_FILES_H_
#define SURGE_COORDINATOR_RESULTS_RUN_FILES_H_

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/results/record_sink.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// A user-given name (model, dataset stem) as one safe folder or file name:
// '/', '\\' and control characters become '_', a leading '.' becomes '_' (so
// ".", ".." and hidden names cannot occur), at most 120 bytes (cut at a UTF-8
// character boundary), and "unknown" for an empty name. Pure.
std::string SafeFileName(const std::string& name);

// Checks before any long work that `output_dir` can be used: the folder, or
// when missing its nearest existing ancestor, is a folder this process may
// write in. Creates nothing. Errors: FAILED_PRECONDITION naming output_dir
// and the reason.
absl::Status CheckOutputDir(const std::filesystem::path& output_dir);

// `{output_dir}/{YYYYMMDD_HHMMSS}/performances/{SafeFileName(model)}/` in
// local time, with `_1`, `_2`, … appended to the timestamp folder when it
// exists (R-PLOT-1). Creates the folders. Errors: INTERNAL
// naming the path when it cannot be created.
absl::StatusOr<std::filesystem::path> CreateRunFolder(
    const std::filesystem::path& output_dir, const std::string& model,
    std::chrono::system_clock::time_point wall_now);

// `wall` in local time as "YYYY-MM-DD HH:MM:SS +hhmm" (the run's start on
// the pages and in the summary's "run.started_at").
std::string FormatLocalTime(std::chrono::system_clock::time_point wall);

// The run's start read back from a run folder's path
// `.../{YYYYMMDD_HHMMSS[_k]}/performances/{model}` (R-PLOT-1) as
// "YYYY-MM-DD HH:MM:SS (local time)": what `surge run` shows on the pages,
// so that `surge report` gives the same text from the folder alone; "" when
// the path does not have that shape.
std::string RunStartFromFolder(const std::filesystem::path& run_folder);

// Writes `{dataset}_plan.csv`: header `index,rate_rps,interval_s,offset_s,anomaly`,
// one row per request in index order, numbers with 17 significant digits so
// they read back exactly (R-OUT-2). Errors: INTERNAL on I/O failure.
// `progress`, when given, is called with the rows written so far about every
// 1 M rows and once at the end.
absl::Status WritePlanCsv(const ArrivalSchedule& plan, const std::filesystem::path& path,
                          const std::function<void(uint64_t rows_done)>& progress = {});

// "OK", "FAILED", "LOST", "NOT_SENT", "INTERRUPTED" → "ok", "failed", "lost",
// "not_sent", "interrupted".
std::string StatusName(surge::v1::RequestStatus status);

// One JSON object per request record, appended and flushed per batch so an
// interrupted run leaves every record received so far readable (R-OUT-1).
// Not thread-safe: one owner (the dispatcher thread).
class DetailsWriter : public RecordSink {
 public:
  // Opens (truncates) `path`. Errors: INTERNAL when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<DetailsWriter>> Create(const std::filesystem::path& path);
  ~DetailsWriter();

  // Appends one line: index, attempt, worker, status, planned_offset_s,
  // released_offset_s, actual_offset_s (first byte sent), lateness_s
  // (actual − planned), blocked_s, http_status, ttft_s, ttfc_s, e2el_s,
  // ttft_from_planned_s and e2el_from_planned_s (ttft_s / e2el_s plus
  // lateness_s, FromPlannedNs; null unless sent with that metric), itl_s,
  // input_tokens, output_tokens, output_tokens_estimated, max_tokens,
  // finish_reason (null when none), short_output, http_retries,
  // retry_reason, retry_offset_s, error. Times not reached are null.
  void Append(const surge::v1::RequestRecord& record);
  // Flushes to the OS. Errors: INTERNAL on a write failure.
  absl::Status Flush();
  // As a sink: Append, then Flush, so an interrupted or crashed run leaves
  // every record received so far readable (R-OUT-1). A write failure is
  // logged once.
  void Add(const surge::v1::RequestRecord& record) override;

 private:
  explicit DetailsWriter(std::FILE* file) : file_(file) {}
  std::FILE* file_;
  bool write_failed_ = false;
};

// Reads a plan written by WritePlanCsv (R-OUT-2); `traffic` and `seed`
// describe how it was made (they are not in the CSV). Every number is read
// exactly (std::from_chars, correctly rounded), so the 17 significant digits
// give back the very doubles that were written and SecondsToNanos(offset_s)
// the same ns (exact replay, docs/REPLAY.md). Strict: the header must be
// R-OUT-2's, each row 5 fields, indexes 0, 1, ... in order, numbers finite,
// offsets >= 0 and non-decreasing, anomaly a known class; a CRLF line end
// and a missing final newline are accepted.
// Errors: NOT_FOUND when missing or not a file; DATA_LOSS naming the file,
// the line and (for a bad field) the column number and name, and what is
// wrong; DATA_LOSS for a file with no rows.
absl::StatusOr<ArrivalSchedule> ReadPlanCsv(const std::filesystem::path& path,
                                            const ResolvedTraffic& traffic, uint64_t seed);

// Converts one details line back into a record (for `surge report` and tests).
absl::StatusOr<surge::v1::RequestRecord> ParseDetailsLine(const std::string& line);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_RUN_FILES_H_
