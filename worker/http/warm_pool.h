// How many connections the sender keeps open and idle ahead of the
// schedule, so that a request (or its preparation) finds one instead of
// opening its own. Pure accounting: the sender tells it each take of a
// connection and each return with the local time, and asks how many
// refill connects to start; the connects themselves run on the I/O thread,
// never on the pacer's. No I/O, no clock of its own, no Asio.
//
// Sizing (Little's law): a connection is held from its take (a preparation
// reserves it, or a request takes it) to its return to the pool, so about
// rate × hold connections are busy at once. The pool keeps
//   spare = ceil(take_rate × min(hold × headroom, max_spare_horizon)) + min_spare
// idle connections (or being opened), where take_rate is the takes of the
// last rate window and hold the mean hold time (an exponential average of
// the returns). The horizon cap keeps long answers (streams of seconds)
// from asking for thousands of idle connections: then the spares cover the
// takes of the next max_spare_horizon, however few connections return. A new connection is opened
// only when idle + refilling falls below spare, at most max_refilling at once, and never past
// max_total open. While the take rate is below min_rate_rps nothing is opened; before any
// return the hold is taken as initial_hold_ns. Before the first take, the pacer may say the rate
// the schedule begins at (StartConnections): then the start's preparations, the rate × hold in
// flight and the spares at that rate are opened before t0.
#ifndef SURGE_WORKER_HTTP_WARM_POOL_H_
#define SURGE_WORKER_HTTP_WARM_POOL_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace surge::worker {

struct WarmPoolOptions {
  // Spare idle connections kept beyond rate × hold, as a fraction of it
  // (0.5: half as many again as are busy on average). 0 keeps min_spare
  // only. Default 0.5.
  double headroom = 0.5;
  // The spare connections cover at most this many ns of takes. Default
  // 20 ms.
  int64_t max_spare_horizon_ns = 20'000'000;
  // Idle connections kept once the rate is at least min_rate_rps,
  // whatever the rate. Default 2.
  int min_spare = 2;
  // Below this take rate the pool keeps no spares: gaps are long enough
  // for a request's preparation to open its own connection ahead of its
  // send, and a server that serves one connection at a time (a proxy with
  // one upstream slot, a test server) is never left waiting on a spare no
  // request uses. Takes per second; default 500.
  double min_rate_rps = 500;
  // Refill connects in progress at once, at most. Default 16.
  int max_refilling = 16;
  // The pool never opens a refill while this many connections are open
  // (idle, busy or being opened). Default 4096.
  size_t max_total = 4096;
  // The take rate: the takes of the last 8 slices of rate_window_ns / 8
  // (the slice under way included) over their time (over the slices since
  // the first take's while that is less: the start of a run is not averaged
  // with the quiet before it). Default 250 ms.
  int64_t rate_window_ns = 250'000'000;
  // The hold assumed before the first return, ns. Default 1 ms.
  int64_t initial_hold_ns = 1'000'000;
  // After a refill that failed (the server refused or timed out), no refill
  // starts for this long, ns; the requests' own connects report the error.
  // Default 100 ms.
  int64_t failed_refill_pause_ns = 100'000'000;
  // Weight of each new return in the mean hold (exponential average).
  // Default 1/16.
  double hold_weight = 1.0 / 16;
};

// What the pool has done so far (for tests, stats and the benchmark).
struct WarmPoolCounts {
  uint64_t takes = 0;       // connections taken for a preparation or a request
  uint64_t cold_takes = 0;  // of them, takes that found no idle connection
  uint64_t refills = 0;     // refill connects started
  uint64_t refills_ok = 0;  // of them, connected and put in the pool
  uint64_t at_start = 0;    // of the refills, those started before t0 (StartConnections)
};

// Not thread-safe: the sender calls it under its own lock.
class WarmPool {
 public:
  explicit WarmPool(WarmPoolOptions options = {});

  // A connection was taken at local `now_ns`: an idle one (`cold` false) or,
  // none being idle, a new one the taker opens itself (`cold` true).
  void OnTake(int64_t now_ns, bool cold);
  // A connection went back to the pool after being held `hold_ns` since
  // its take.
  void OnReturn(int64_t hold_ns);
  // Refill connects: `n` started; one ended at `now_ns`, connected (`ok`,
  // now idle) or not (refills pause for failed_refill_pause_ns).
  void OnRefillsStarted(int n);
  void OnRefillDone(bool ok, int64_t now_ns);

  // Connections to open before the start, for a schedule that begins at
  // `rate_rps` with `prepared_at_once` preparations holding a connection
  // each from the first moments on (the pacer prepares that many ahead):
  // the spare target's formula with the hold of the start, the lead those
  // preparations stand for (prepared_at_once / rate) plus the hold after
  // the release (initial_hold_ns before any return):
  //   ceil(rate × hold) + ceil(rate × min(hold × headroom, horizon)) + min_spare,
  // 0 below min_rate_rps, at most max_total. Without it the start's
  // preparations all find the pool empty and connect at once: at 20,000
  // RPS that storm put the I/O thread behind for good.
  size_t StartConnections(double rate_rps, size_t prepared_at_once) const;
  // The start's connects started (counted as refills too).
  void OnStartConnectsStarted(int n);

  // How many refill connects to start at `now_ns` with `idle` connections
  // in the pool and `open` connections open in all (idle, busy and being
  // opened, refills included); 0 during a pause after a failed refill.
  int RefillsDue(int64_t now_ns, size_t idle, size_t open) const;

  // Takes per second over the rate window ending at `now_ns`.
  double TakeRate(int64_t now_ns) const;
  // The mean hold, ns.
  int64_t hold_ns() const { return static_cast<int64_t>(hold_ns_); }
  // The spare target at `now_ns` (see the file comment).
  size_t SpareTarget(int64_t now_ns) const;
  int refilling() const { return refilling_; }
  const WarmPoolCounts& counts() const { return counts_; }

 private:
  static constexpr int kSlices = 8;
  int64_t SliceNs() const;
  // The spare target at a take rate of `rate_rps` and a mean hold of
  // `hold_ns`; 0 below min_rate_rps.
  size_t SpareAt(double rate_rps, double hold_ns) const;
  struct Slice {
    int64_t number = INT64_MIN;  // now_ns / slice length
    uint64_t takes = 0;
  };

  const WarmPoolOptions options_;
  // Takes per slice, indexed by slice number modulo kSlices.
  std::array<Slice, kSlices> slices_{};
  int64_t first_slice_ = INT64_MIN;  // slice number of the first take
  double hold_ns_;
  bool hold_seen_ = false;
  int refilling_ = 0;
  int64_t paused_until_ns_ = INT64_MIN;
  WarmPoolCounts counts_;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_WARM_POOL_H_
