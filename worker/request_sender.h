// What the pacer hands a request to. Implementations
// send over HTTP (worker/http/) or record calls in tests.
#ifndef SURGE_WORKER_REQUEST_SENDER_H_
#define SURGE_WORKER_REQUEST_SENDER_H_

#include <chrono>
#include <cstdint>
#include <functional>

#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"

namespace surge::worker {

// Called exactly once per Send, on an I/O thread. The record carries index,
// attempt, status, error, http_status, token counts, ttft_ns/e2el_ns/itl_ns
// (durations) and sent_ns as an *absolute* local steady-clock time
// (ToNanos(clock.Now()) when the first byte was handed to the socket, R-ACT-2),
// 0 when nothing was sent; retry_sent_ns and interrupted_ns, when not 0, are
// absolute too. The caller converts them to t0-relative time.
using SendCallback = std::function<void(surge::v1::RequestRecord)>;

// Connections a sender opened so far and their total set-up time (connect
// and, for https, the handshake), ns. For the lateness monitor's
// "connection set-up" cause (worker/send_health.h).
struct ConnectTotals {
  uint64_t connects = 0;
  int64_t connect_ns = 0;
};

// What a sender's connections and threads did over the run, for the
// worker's last log line (docs/PERFORMANCE.md "Warm connections").
struct SenderStats {
  // Connections opened (connected) in all.
  uint64_t connections_opened = 0;
  // With a warm pool: connections taken for a preparation or a request, the
  // takes that found none idle (each opened its own), and the refills that
  // connected ahead of the takes; all 0 without one.
  uint64_t takes = 0;
  uint64_t cold_takes = 0;
  uint64_t refills_ok = 0;
  // Of the refills, the connections opened before the start (WarmConnections).
  uint64_t at_start = 0;
  // CPU time of the sender's I/O threads, ns; complete once Shutdown
  // returned (0 when not measured).
  int64_t io_cpu_ns = 0;
};

// Sends requests without blocking the caller. Thread-safe.
class RequestSender {
 public:
  virtual ~RequestSender() = default;
  // Starts sending `assignment` now; `on_done` runs exactly once.
  virtual void Send(const surge::v1::Assignment& assignment, SendCallback on_done) = 0;
  // Optional, non-blocking: gets `assignment` ready ahead of its Send (the
  // pacer calls it SendLoopOptions::prepare_lead before the deadline), e.g.
  // builds its bytes and reserves a connected connection, so that Send has
  // only the write left. A later Send of the same (index, attempt) uses what
  // was prepared; Send works the same without it. Nothing is sent here.
  virtual void Prepare(const surge::v1::Assignment& assignment) { (void)assignment; }
  // Releases what Prepare reserved for an assignment that will not be sent
  // (the pacer stopped first). No-op when nothing was prepared for it.
  virtual void CancelPrepared(const surge::v1::Assignment& assignment) { (void)assignment; }
  // Optional, non-blocking, before the start: the schedule begins at
  // `rate_rps` (this worker's share), and the pacer will hold up to
  // `prepared_at_once` preparations from its first moments on; a sender
  // with a connection pool may open connections for that now, so that the
  // start does not connect them all at once. Default: nothing.
  virtual void WarmConnections(double rate_rps, size_t prepared_at_once) {
    (void)rate_rps;
    (void)prepared_at_once;
  }
  // Requests started and not yet finished.
  virtual size_t inflight() const = 0;
  // Connections opened so far; default: none counted.
  virtual ConnectTotals connect_totals() const { return {}; }
  // Requests whose first byte was handed to the socket so far (each of
  // them gets a record with sent_ns), for the heartbeat's sent_total and
  // the live metrics (docs/METRICS.md); default: none counted (0).
  virtual uint64_t sent_total() const { return 0; }
  // Connections and I/O threads so far; default: nothing counted.
  virtual SenderStats stats() const { return {}; }
  // For a pacer waiting for a deadline (SendLoopOptions::assist_margin):
  // whether the sender has I/O completions another thread may run, and
  // running one that is ready now on the calling thread (true when it ran
  // one; never blocks). Default: none.
  virtual bool TakesHelp() const { return false; }
  virtual bool RunReadyWork() { return false; }
  // Waits up to `drain` for in-flight requests to finish; then cuts off the
  // rest and stops the I/O threads. Idempotent. A cut-off request whose first
  // byte was sent gets status INTERRUPTED ("interrupted: ...") with sent_ns,
  // ttft_ns, itl_ns and the output tokens so far and interrupted_ns (absolute
  // local steady ns, like sent_ns); one that never was, NOT_SENT.
  // (A sender that knows nothing about a request reports INTERRUPTED
  // "interrupted: no_record".)
  virtual void Shutdown(std::chrono::milliseconds drain) = 0;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_REQUEST_SENDER_H_
