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
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/results/details_json.h"
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

// `{output_dir}/{YYYYMMDD_HHMMSSZ}/performances/{SafeFileName(model)}/`, the
// timestamp in UTC (RunFolderStamp) so that run folders sort by time, also
// across a daylight-saving change, with `_1`, `_2`, … appended to the
// timestamp folder when it exists (R-PLOT-1). Creates the folders. Errors:
// INTERNAL naming the path when it cannot be created.
absl::StatusOr<std::filesystem::path> CreateRunFolder(
    const std::filesystem::path& output_dir, const std::string& model,
    std::chrono::system_clock::time_point wall_now);

// The run folder's timestamp name: `wall` in UTC as "YYYYMMDD_HHMMSSZ"
// ("20261202_043327Z"). Older releases wrote local time without the "Z".
std::string RunFolderStamp(std::chrono::system_clock::time_point wall);

// `wall` in local time ($TZ) with its UTC offset, ISO 8601:
// "2026-12-02T04:33:27+08:00" (the run's start on the pages and in the
// summary's "run.started_at").
std::string FormatLocalTime(std::chrono::system_clock::time_point wall);

// `wall` in UTC, ISO 8601: "2026-12-01T20:33:27Z" ("run.started_at_utc").
std::string FormatUtcTime(std::chrono::system_clock::time_point wall);

// The run's start read back from a run folder's path
// `.../{stamp}/performances/{model}` (R-PLOT-1), for `surge report` on a
// folder without its summary: for a UTC name ("YYYYMMDD_HHMMSSZ[_k]") that
// instant as FormatLocalTime gives it; for an older local-time name
// ("YYYYMMDD_HHMMSS[_k]", offset unknown) "YYYY-MM-DD HH:MM:SS (local
// time)"; "" when the path does not have that shape.
std::string RunStartFromFolder(const std::filesystem::path& run_folder);
// The same start in UTC (FormatUtcTime) for a UTC name; "" otherwise.
std::string RunStartUtcFromFolder(const std::filesystem::path& run_folder);

// Writes `{dataset}_plan.csv`: header `index,rate_rps,interval_s,offset_s,anomaly`,
// one row per request in index order, numbers with 17 significant digits so
// they read back exactly (R-OUT-2). A plan with traffic classes has a sixth
// column, `class`: the request's class name (its interval_s is the one in
// its class's own plan). Errors: INTERNAL on I/O failure.
// `progress`, when given, is called with the rows written so far about every
// 1 M rows and once at the end.
absl::Status WritePlanCsv(const ArrivalSchedule& plan, const std::filesystem::path& path,
                          const std::function<void(uint64_t rows_done)>& progress = {});

// "OK", "FAILED", "LOST", "NOT_SENT", "INTERRUPTED" → "ok", "failed", "lost",
// "not_sent", "interrupted".
std::string StatusName(surge::v1::RequestStatus status);

struct DetailsWriterOptions {
  // Format and write the lines on a thread of the writer's own (so that
  // ingest keeps up): Add() only copies the record into a queue, so the dispatcher's
  // loop does not wait for the formatting or the write(2). The thread
  // writes whatever has queued up as soon as it can (one write per batch,
  // typically within ~0.1 ms of the Add). Default false: Add formats and
  // writes each line itself.
  bool writer_thread = false;
  // writer_thread only: Add() waits while this many records are queued and
  // not yet written, so memory stays bounded when the disk is slower than
  // the records arrive (~1.5 KB per streamed record of 128 tokens).
  size_t max_queued = 16384;
};

// One JSON object per request record (AppendDetailsLine), appended so an
// interrupted run leaves every record received so far readable (R-OUT-1).
// Not thread-safe: one owner (the dispatcher thread) calls Append, Add and
// Flush; with writer_thread the writing happens on the writer's thread.
class DetailsWriter : public RecordSink {
 public:
  // Opens (truncates) `path`. Errors: INTERNAL when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<DetailsWriter>> Create(const std::filesystem::path& path,
                                                               DetailsWriterOptions options = {});
  // Writes what is queued, then closes the file.
  ~DetailsWriter();

  // Appends one line: index, attempt, worker, status, planned_offset_s,
  // released_offset_s, actual_offset_s (first byte sent), lateness_s
  // (actual − planned), blocked_s, http_status, ttft_s, ttfc_s, e2el_s,
  // ttft_from_planned_s and e2el_from_planned_s (ttft_s / e2el_s plus
  // lateness_s, FromPlannedNs; null unless sent with that metric), itl_s,
  // input_tokens, output_tokens, output_tokens_estimated, max_tokens,
  // finish_reason (null when none), short_output, http_retries,
  // retry_reason, retry_offset_s, error. Times not reached are null.
  // Without writer_thread the line waits in a buffer until Flush.
  void Append(const surge::v1::RequestRecord& record);
  // Hands everything appended so far to the OS (with writer_thread: waits
  // until the writer thread has). Errors: INTERNAL on a write failure.
  absl::Status Flush();
  // As a sink: without writer_thread Append, then Flush, so an interrupted
  // or crashed run leaves every record received so far readable (R-OUT-1);
  // with writer_thread Append only (the thread writes it within
  // milliseconds; a graceful stop writes everything, a crash of the
  // coordinator can lose the records of those milliseconds). A write
  // failure is logged once.
  void Add(const surge::v1::RequestRecord& record) override;

 private:
  DetailsWriter(int fd, DetailsWriterOptions options);
  // Writes `bytes` fully; false on a write error.
  bool WriteAll(const char* bytes, size_t size);
  void WriterLoop();
  void ReportFailure(uint64_t from_index);

  const int fd_;
  DetailsWriterOptions options_;
  LineBuffer buffer_;  // lines not written yet (no writer_thread)
  bool write_failed_ = false;
  bool failure_logged_ = false;

  // writer_thread: records queued by Add (queue_[0, queued_) hold them;
  // the slots are reused, so a steady run allocates nothing).
  struct Queue;
  std::unique_ptr<Queue> queue_;
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
//
// A plan with traffic classes (`classes` not empty: the configuration's,
// whose names the class column must hold) has a sixth column `class`; the
// plan read back has those classes, with each request's class and index in
// its class counted from the rows.
absl::StatusOr<ArrivalSchedule> ReadPlanCsv(const std::filesystem::path& path,
                                            const ResolvedTraffic& traffic, uint64_t seed,
                                            const std::vector<TrafficClassPlan>& classes = {});

// Converts one details line back into a record (for `surge report` and tests).
absl::StatusOr<surge::v1::RequestRecord> ParseDetailsLine(const std::string& line);

// Reads the details file at `path` line by line, in order, and gives
// `on_line` each line's record or the reason it is none (a line cut short
// by a crash, say: ParseDetailsLine's error). The records are not kept. A
// missing or unreadable file gives no line.
void ForEachDetailsLine(
    const std::filesystem::path& path,
    const std::function<void(absl::StatusOr<surge::v1::RequestRecord>)>& on_line);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_RUN_FILES_H_
