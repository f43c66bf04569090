// The run folder's mark of a run in progress, `run_state.json`: what state
// the coordinator was last in and until when it was alive, rewritten about
// once a second while the run goes on, so that `surge report` on a folder
// whose coordinator crashed can tell a request that may have been sent
// (LOST, no record) from one that was due only after every worker had
// stopped (NOT_SENT: the run ended early).
#ifndef SURGE_COORDINATOR_RESULTS_RUN_STATE_H_
#define SURGE_COORDINATOR_RESULTS_RUN_STATE_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace surge::coordinator {

// One mark. `state` is "waiting_for_workers" (the folder exists, t0 not yet
// set: nothing can have been sent), "running", "stopping" (a stop was asked
// for; in-flight requests drain), "ended" (the summary was written) or
// "never_started" (the run failed before t0, e.g. its workers did not all
// join in time; nothing was sent).
struct RunStateMark {
  std::string state;
  // Seconds after t0 on the coordinator's clock when the mark was written
  // (negative before the start; 0 while waiting for workers).
  double elapsed_s = 0;
  // No request planned later than this (s after t0) can have been sent if
  // the coordinator stops before its next mark: elapsed_s + the mark period
  // + the workers' lease (a worker releases nothing once its lease ran out,
  // and a lease is renewed only by the coordinator) + a margin. Unset (−1)
  // before the start.
  double no_send_after_s = -1;
  // Final records so far.
  uint64_t records = 0;
  // How the run ended ("ended"), or why it never started ("never_started").
  std::string stop_reason;
};

// The mark as written: one JSON object with the fields above. Pure.
std::string RunStateJson(const RunStateMark& mark);

// Reads `path`. Errors: NOT_FOUND when there is none (a folder written
// before surge kept this mark), DATA_LOSS when it cannot be parsed.
absl::StatusOr<RunStateMark> ReadRunState(const std::filesystem::path& path);

// Keeps `run_state.json` in a run folder up to date. Each write replaces the
// file whole (written beside it, then renamed), so a crash leaves the last
// complete mark. Not thread-safe; in a run, used from the dispatcher thread
// after Waiting().
class RunStateWriter {
 public:
  // `lease_ms`: the workers' lease (DispatcherOptions::lease_ms);
  // `period_s`: the least time between two running marks.
  RunStateWriter(std::filesystem::path folder, uint32_t lease_ms, double period_s = 1.0);
  // The folder exists, the run has not started.
  void Waiting();
  // While running: writes when `elapsed_s` is at least `period_s` past the
  // last mark, or the state changed (`stopping`).
  void Update(double elapsed_s, bool stopping, uint64_t records);
  // The summary is written: the last mark.
  void Ended(const std::string& stop_reason, uint64_t records);
  // The run failed before its start (no Update came): why. Does nothing
  // once the run has started.
  void NeverStarted(const std::string& why);

  // The margin added to no_send_after_s for the dispatcher's own turn and
  // the clock mapping, s.
  static constexpr double kMarginS = 0.5;

 private:
  void Write(const RunStateMark& mark);

  std::filesystem::path path_;
  double lease_s_;
  double period_s_;
  bool started_ = false;
  bool stopping_ = false;
  double last_elapsed_s_ = 0;
  bool write_failed_ = false;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_RUN_STATE_H_
