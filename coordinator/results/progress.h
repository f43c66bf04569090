// Progress of a running job (R-UI-3): on a terminal one line rewritten in
// place; otherwise plain log lines at a slower pace.
#ifndef SURGE_COORDINATOR_RESULTS_PROGRESS_H_
#define SURGE_COORDINATOR_RESULTS_PROGRESS_H_

#include <cstdio>
#include <string>
#include <vector>

#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/results/record_sink.h"

namespace surge::coordinator {

// The progress text for one snapshot: elapsed, done/planned, OK, failed
// (not OK and not not-sent), not sent (when any), in flight, achieved
// sending rate so far, ETA (seconds until the last planned send, then
// "draining"; "stopping" once the run is being stopped). Pure.
std::string FormatProgress(const DispatchProgress& p);

// The live lateness part of the progress line: "  late
// p50/p99 ms w0 0.02/0.05 w1 0.03/0.08" — each worker's send lateness over
// its last reported window (about 1 s), ms (the p99 column shows the
// overdue time of a worker whose earliest queued request is later than
// that; "-" for no sends); with more than 4 workers only the worst by p99,
// "worst w3 0.03/0.08 (of 16)". "  BEHIND" once an alarm fired. "" before
// any report. Pure.
std::string FormatLateness(const std::vector<WorkerLateness>& workers, bool behind);

// Writes FormatProgress lines to `out`: every update on a terminal (with
// "\r", cleared by Finish), else one line per `plain_period_s`. A record
// sink: it counts the final records (done, sent, OK, not
// sent) itself; the dispatcher's snapshots bring the live part (elapsed, in
// flight, lateness, stopping). Not thread-safe; used from the dispatcher
// thread.
class ProgressReporter : public RecordSink {
 public:
  ProgressReporter(std::FILE* out, bool terminal, double plain_period_s = 5.0)
      : out_(out), terminal_(terminal), plain_period_s_(plain_period_s) {}
  void Add(const surge::v1::RequestRecord& record) override;
  // Shows `live` with this sink's record counts in its records, sent, ok and
  // not_sent.
  void Update(const DispatchProgress& live);
  // Ends the in-place line on a terminal.
  void Finish();

 private:
  std::FILE* out_;
  bool terminal_;
  double plain_period_s_;
  double next_plain_s_ = -1e9;
  bool dirty_ = false;
  uint64_t records_ = 0, sent_ = 0, ok_ = 0, not_sent_ = 0;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_PROGRESS_H_
