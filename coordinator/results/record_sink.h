// Where per-request records go: a fan-out of sinks. The
// dispatcher (or `surge report`, reading a details file) hands each final
// record to one RecordFanOut, which passes it to the details file, the
// summary accumulator, the actual page's send list, and whatever else a run
// attaches — none of them needs the whole record list in memory.
#ifndef SURGE_COORDINATOR_RESULTS_RECORD_SINK_H_
#define SURGE_COORDINATOR_RESULTS_RECORD_SINK_H_

#include <utility>
#include <vector>

#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// Takes the final record of each planned request (R-OUT-1: one per request).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void Add(const surge::v1::RequestRecord& record) = 0;
};

// Passes every record to each sink, in the order they were attached. Does
// not own them; each must outlive the fan-out's use.
class RecordFanOut : public RecordSink {
 public:
  RecordFanOut() = default;
  explicit RecordFanOut(std::vector<RecordSink*> sinks) : sinks_(std::move(sinks)) {}
  void Attach(RecordSink* sink) { sinks_.push_back(sink); }
  void Add(const surge::v1::RequestRecord& record) override {
    for (RecordSink* sink : sinks_) sink->Add(record);
  }

 private:
  std::vector<RecordSink*> sinks_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_RECORD_SINK_H_
