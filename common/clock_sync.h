// The shared clock (R-DIST-4): estimates how a worker's steady clock relates
// to the coordinator's from NTP-style exchanges, and maps instants between
// the two. Pure: it is fed timestamps and never reads a clock itself.
//
// Every exchange gives four timestamps (ns):
//   t1 worker send, t2 coordinator receive, t3 coordinator send, t4 worker
//   receive (t1, t4 on the worker's clock; t2, t3 on the coordinator's).
// Round trip δ = (t4 − t1) − (t3 − t2); the sample's offset
//   θ = ((t1 − t2) + (t4 − t3)) / 2 = worker − coordinator
// is exact when the two network legs take equal time and wrong by at most
// δ/2 otherwise, so samples with the smallest δ are the trustworthy ones.
// The estimator keeps, per bucket of coordinator time, the sample with the
// smallest δ, drops buckets whose best δ is far above the window's minimum,
// and fits θ = offset + drift · (c − c_ref) by least squares (c = the
// coordinator-time midpoint (t2 + t3)/2). Before two buckets span
// min_fit_span it uses the mean θ of the 3 lowest-δ samples, drift 0.
// docs/DESIGN.md "Shared clock" gives the details.
#ifndef SURGE_COMMON_CLOCK_SYNC_H_
#define SURGE_COMMON_CLOCK_SYNC_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace surge {

// One exchange's four timestamps, ns (see above).
struct ClockSample {
  int64_t t1_worker_ns = 0;
  int64_t t2_coord_ns = 0;
  int64_t t3_coord_ns = 0;
  int64_t t4_worker_ns = 0;
};

// worker = coord + offset_ns + drift · (coord − ref_coord_ns), with
// drift = drift_ppm / 1e6. Identity by default (same clock). A value type:
// the pacer copies it under a lock and maps every deadline through it.
struct ClockMapping {
  int64_t ref_coord_ns = 0;
  int64_t offset_ns = 0;
  double drift_ppm = 0;

  // Worker-clock ns of the coordinator instant `coord_ns`.
  int64_t ToWorker(int64_t coord_ns) const;
  // Coordinator-clock ns of the worker instant `worker_ns` (exact inverse of
  // ToWorker up to 1 ns of rounding).
  int64_t ToCoord(int64_t worker_ns) const;
};

// What the estimator knows now.
struct ClockEstimate {
  // False until min_probes samples were accepted.
  bool ready = false;
  // The mapping; offset_ns is worker − coordinator at ref_coord_ns (the
  // latest accepted sample's coordinator time), ns.
  ClockMapping mapping;
  // Bound on |estimated − true offset| at ref_coord_ns, ns:
  // δ_min/2 + RMS fit residual + 1 µs (see docs/DESIGN.md).
  int64_t uncertainty_ns = 0;
  // Smallest round trip in the window, ns.
  int64_t min_rtt_ns = 0;
  // Samples accepted / rejected (RTT outliers, impossible timestamps) so far.
  uint64_t samples = 0;
  uint64_t rejected = 0;
  // Largest change of the mapped "now" caused by one new sample, ns: how
  // much a deadline ever jumped.
  int64_t largest_step_ns = 0;
  // True once drift is fitted (two buckets min_fit_span apart).
  bool drift_fitted = false;
};

struct ClockSyncOptions {
  // Samples needed before the estimate is ready (probes before the start).
  int min_probes = 8;
  // A sample with δ above this is rejected outright, ns.
  int64_t max_rtt_ns = 50'000'000;
  // A bucket minimum is used in the fit only when its δ ≤
  // max(outlier_factor · δ_min, δ_min + outlier_slack_ns).
  double outlier_factor = 4.0;
  int64_t outlier_slack_ns = 500'000;
  // Width of a bucket of coordinator time, ns; one point per bucket.
  int64_t bucket_ns = 1'000'000'000;
  // Buckets kept (the fit window): 32 × 1 s.
  size_t max_buckets = 32;
  // Drift is fitted once the used buckets span at least this, ns.
  int64_t min_fit_span_ns = 2'000'000'000;
  // |drift| is clamped to this, ppm (real oscillators: < 100 ppm).
  double max_abs_drift_ppm = 1000;
};

// Not thread-safe: one owner feeds it and copies the mapping out.
class ClockSyncEstimator {
 public:
  explicit ClockSyncEstimator(ClockSyncOptions options = {});

  // Feeds one exchange. Returns false (and counts it rejected) when t4 < t1,
  // t3 < t2, δ < 0 or δ > max_rtt_ns; the estimate is then unchanged.
  bool AddSample(const ClockSample& sample);
  // The current estimate (recomputed on each accepted sample).
  const ClockEstimate& estimate() const { return estimate_; }
  bool ready() const { return estimate_.ready; }
  const ClockMapping& mapping() const { return estimate_.mapping; }

 private:
  struct Point {
    int64_t coord_mid_ns;  // (t2 + t3) / 2
    int64_t theta_ns;      // worker − coordinator
    int64_t rtt_ns;        // δ
  };
  void Recompute();

  ClockSyncOptions options_;
  // Per bucket (ascending coordinator time): its lowest-δ point.
  std::deque<std::pair<int64_t, Point>> buckets_;
  // The lowest-δ points ever seen, at most 3 (the probe estimate).
  std::vector<Point> best_;
  ClockEstimate estimate_;
};

}  // namespace surge

#endif  // SURGE_COMMON_CLOCK_SYNC_H_
