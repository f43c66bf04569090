// A worker that follows the protocol in simulated time, driven step by step
// on the test's thread (the AutoAdvanceClock's world): Hello, a first
// heartbeat right after Welcome (ready; later with set_setup), heartbeats
// every heartbeat_ms, and each assignment "sent" at the first step at or
// after t0 + its offset, answered OK at once (one RecordBatch per step).
// Silence() models a hung, stopped or killed process: it says nothing more
// and reads nothing; Wake() lets a stopped one continue (it speaks, but its
// lease has ended).
// Not thread-safe: one test thread.
#ifndef SURGE_TESTS_TESTING_SCRIPTED_WORKER_H_
#define SURGE_TESTS_TESTING_SCRIPTED_WORKER_H_

#include <algorithm>
#include <chrono>
#include <climits>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/transport.h"
#include "surge/v1/wire.pb.h"

namespace surge::testing {

class ScriptedWorker {
 public:
  struct Sent {
    uint64_t index;
    uint32_t attempt;
    int64_t sent_ns;  // after t0
  };

  ScriptedWorker(Clock& clock, std::unique_ptr<Transport> transport, int32_t requested_index)
      : clock_(clock), transport_(std::move(transport)), requested_index_(requested_index) {}

  // One turn at the clock's current time.
  void Step() {
    if (silent_ || gone_) return;
    const int64_t now_ns = ToNanos(clock_.Now());
    if (!said_hello_) {
      surge::v1::Envelope hello;
      hello.mutable_hello()->set_requested_index(requested_index_);
      SendEnvelope(std::move(hello));
      said_hello_ = true;
    }
    while (true) {
      auto in = transport_->Receive(clock_.Now());
      if (!in.ok() || !in->has_value()) break;
      const surge::v1::Envelope& e = (*in)->message;
      if (e.has_welcome()) {
        if (!welcomed_) next_heartbeat_ns_ = now_ns + setup_ns_;  // ready then
        welcomed_ = true;
        heartbeat_ns_ = static_cast<int64_t>(e.welcome().heartbeat_ms()) * 1000000;
      } else if (e.has_start()) {
        t0_ns_ = e.start().t0_coord_ns();
        started_ = true;
      } else if (e.has_assignment_batch()) {
        ++assignment_batches_;
        assignment_bytes_ += e.ByteSizeLong();
        const size_t old_size = queue_.size();
        for (const auto& a : e.assignment_batch().assignments()) {
          if (started_) min_lead_ns_ = std::min(min_lead_ns_, t0_ns_ + a.offset_ns() - now_ns);
          queue_.push_back(a);
        }
        auto by_offset = [](const auto& x, const auto& y) { return x.offset_ns() < y.offset_ns(); };
        // Batches usually arrive in plan order: sort only when they do not.
        const auto tail = queue_.begin() + static_cast<long>(old_size == 0 ? 0 : old_size - 1);
        if (!std::is_sorted(tail, queue_.end(), by_offset)) {
          std::stable_sort(queue_.begin(), queue_.end(), by_offset);
        }
      } else if (e.has_heartbeat_ack()) {
        ++acks_;
      } else if (e.has_stop()) {
        stop_reason_ = e.stop().reason();
        surge::v1::Envelope bye;
        bye.mutable_goodbye()->set_reason(stop_reason_);  // as a real worker says
        SendEnvelope(std::move(bye));
        gone_ = true;
        return;
      }
    }
    if (started_ && !lease_ended_) {
      surge::v1::Envelope batch;
      size_t released = 0;
      while (released < queue_.size() && t0_ns_ + queue_[released].offset_ns() <= now_ns) {
        const auto& a = queue_[released++];
        auto* r = batch.mutable_record_batch()->add_records();
        r->set_index(a.index());
        r->set_attempt(a.attempt());
        r->set_worker(index_hint());
        r->set_status(surge::v1::OK);
        r->set_sent(true);
        r->set_sent_ns(now_ns - t0_ns_);
        if (record_itl_values_ > 0) {  // the timings of a streamed answer
          r->set_ttft_ns(180'000'000);
          r->set_e2el_ns(180'000'000 + int64_t{20'000'000} * record_itl_values_);
          r->set_output_tokens(static_cast<uint32_t>(record_itl_values_ + 1));
          r->set_http_status(200);
          r->set_finish_reason("length");
          for (int k = 0; k < record_itl_values_; ++k)
            r->add_itl_ns(19'000'000 + (k * 7919) % 4'000'000);
        }
        sent_.push_back(Sent{a.index(), a.attempt(), now_ns - t0_ns_});
      }
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<long>(released));
      if (released > 0) {
        batch.mutable_record_batch()->set_batch_seq(++batch_seq_);
        record_bytes_ += SendEnvelope(std::move(batch));
      }
    }
    if (welcomed_ && now_ns >= next_heartbeat_ns_) {
      surge::v1::Envelope hb;
      hb.mutable_heartbeat()->set_hb_seq(++hb_seq_);
      hb.mutable_heartbeat()->set_t1_worker_ns(now_ns);
      hb.mutable_heartbeat()->set_inflight(0);
      hb.mutable_heartbeat()->set_queued(static_cast<uint32_t>(queue_.size()));
      if (started_ && send_health_) {
        *hb.mutable_heartbeat()->mutable_send_health() = send_health_(now_ns - t0_ns_);
      }
      if (!started_ && target_check_) {
        *hb.mutable_heartbeat()->mutable_target_check() = *target_check_;
      }
      SendEnvelope(std::move(hb));
      next_heartbeat_ns_ = now_ns + heartbeat_ns_;
    }
  }

  // Records carry the timings of a streamed answer with this many
  // inter-token latencies (real-sized records for the scale bench); 0 (the
  // default): index, attempt, worker, status and sent_ns only.
  void set_record_itl_values(int n) { record_itl_values_ = n; }
  // After Start, every heartbeat carries the SendHealth this returns for
  // the instant (ns after t0): the test models the worker's lateness.
  void set_send_health(std::function<surge::v1::SendHealth(int64_t now_after_t0_ns)> f) {
    send_health_ = std::move(f);
  }
  // Before Start, every heartbeat carries this pre-flight check of the
  // target (a standalone worker's; none by default).
  void set_target_check(surge::v1::TargetCheck check) { target_check_ = std::move(check); }
  // Its first heartbeat (which makes it ready) comes this long after the
  // Welcome instead of at once: a real worker's clock sync and warm-up.
  void set_setup(std::chrono::nanoseconds setup) { setup_ns_ = setup.count(); }
  // From now on the worker says nothing and reads nothing.
  void Silence() { silent_ = true; }
  // A silenced worker wakes (SIGCONT after SIGSTOP): it speaks and reads
  // again, but, like a real worker whose lease ran out while it was frozen
  // (its pacer checks the lease at every release), it releases nothing more.
  void Wake() {
    silent_ = false;
    lease_ended_ = true;
  }
  // A silenced worker speaks and reads again with its lease intact (a
  // network blip shorter than the lease: its pacer never stopped).
  void Resume() { silent_ = false; }
  const std::vector<Sent>& sent() const { return sent_; }
  const std::string& stop_reason() const { return stop_reason_; }
  bool gone() const { return gone_; }
  uint64_t acks() const { return acks_; }
  // Traffic counters (bench/dispatcher_scale_bench.cc): AssignmentBatches
  // received and their serialized Envelope bytes; RecordBatches sent (one
  // per batch_seq) and their bytes; heartbeats sent.
  uint64_t assignment_batches() const { return assignment_batches_; }
  uint64_t assignment_bytes() const { return assignment_bytes_; }
  uint64_t record_batches() const { return batch_seq_; }
  uint64_t record_bytes() const { return record_bytes_; }
  uint64_t heartbeats() const { return hb_seq_; }
  // Smallest (planned send time - arrival time) over the assignments that
  // came after Start, ns; INT64_MAX when none did. Negative: one came late.
  int64_t min_lead_ns() const { return min_lead_ns_; }

 private:
  int32_t index_hint() const { return requested_index_; }
  // Returns the serialized size, bytes.
  size_t SendEnvelope(surge::v1::Envelope e) {
    e.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
    e.set_seq(++seq_);
    const size_t bytes = e.ByteSizeLong();
    (void)transport_->Send("", e);
    return bytes;
  }

  Clock& clock_;
  std::unique_ptr<Transport> transport_;
  std::function<surge::v1::SendHealth(int64_t)> send_health_;
  int32_t requested_index_;
  bool said_hello_ = false;
  bool welcomed_ = false;
  bool started_ = false;
  bool silent_ = false;
  bool lease_ended_ = false;
  bool gone_ = false;
  int64_t t0_ns_ = 0;
  int64_t heartbeat_ns_ = 250 * 1000000;
  int64_t next_heartbeat_ns_ = 0;
  int64_t setup_ns_ = 0;  // Welcome to first heartbeat
  uint64_t hb_seq_ = 0;
  uint64_t batch_seq_ = 0;
  uint64_t seq_ = 0;
  uint64_t acks_ = 0;
  uint64_t assignment_batches_ = 0;
  uint64_t assignment_bytes_ = 0;
  uint64_t record_bytes_ = 0;
  int64_t min_lead_ns_ = INT64_MAX;
  int record_itl_values_ = 0;
  std::deque<surge::v1::Assignment> queue_;
  std::vector<Sent> sent_;
  std::string stop_reason_;
  std::optional<surge::v1::TargetCheck> target_check_;
};

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_SCRIPTED_WORKER_H_
