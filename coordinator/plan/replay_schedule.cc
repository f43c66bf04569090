#include "coordinator/plan/replay_schedule.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

// The seed's description with the trace's rate row, title and log intro.
TrafficDescription DescribeReplay(const ResolvedTraffic& t, const std::vector<double>& offsets_s,
                                  double time_scale) {
  TrafficDescription d = DescribeSeedTraffic(t, offsets_s.size());
  d.title = "Trace replay";
  d.context[0].value = absl::StrCat("trace replay: the trace's timestamps (mean ",
                                    absl::StrFormat("%.6g RPS", t.target_rate_rps), ")");
  d.log_intro = absl::StrFormat(
      "trace replay: %d requests over %g s (time scale %g), mean rate %g RPS, first request "
      "at offset 0",
      offsets_s.size(), offsets_s.empty() ? 0.0 : offsets_s.back(), time_scale, t.target_rate_rps);
  return d;
}

}  // namespace

ResolvedTraffic ResolveReplayTraffic(const std::vector<double>& offsets_s,
                                     double trace_time_scale) {
  ResolvedTraffic t;
  t.trace_replay = true;
  const size_t n = offsets_s.size();
  if (n == 0) {
    t.instant = true;
    t.description = DescribeReplay(t, offsets_s, trace_time_scale);
    return t;
  }
  const double first = offsets_s.front();
  const double last = offsets_s.back();
  double rate = 0;
  if (n >= 2 && last > first) {
    rate = static_cast<double>(n - 1) / (last - first);
  } else if (last > 0) {
    rate = static_cast<double>(n) / last;
  }
  t.request_rate_rps = rate;
  t.target_rate_rps = rate;
  t.instant = !(last > 0);
  if (n >= 3 && last > first) {
    const double mean = (last - first) / static_cast<double>(n - 1);
    double sum_sq = 0;
    for (size_t i = 1; i < n; ++i) {
      const double d = (offsets_s[i] - offsets_s[i - 1]) - mean;
      sum_sq += d * d;
    }
    const double variance = sum_sq / static_cast<double>(n - 1);
    if (variance > 0) t.burstiness = mean * mean / variance;
  }
  t.description = DescribeReplay(t, offsets_s, trace_time_scale);
  return t;
}

absl::StatusOr<ArrivalSchedule> BuildReplaySchedule(const std::vector<double>& offsets_s,
                                                    uint64_t seed, double trace_time_scale) {
  if (offsets_s.empty()) return absl::InvalidArgumentError("num_prompts must be >= 1");
  for (size_t i = 0; i < offsets_s.size(); ++i) {
    const double t = offsets_s[i];
    if (!std::isfinite(t) || t < 0 || (i > 0 && t < offsets_s[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("trace replay offset of request ", i, " is ", t,
                       ": offsets must be finite, >= 0 and non-decreasing"));
    }
  }
  ArrivalSchedule plan;
  plan.traffic = ResolveReplayTraffic(offsets_s, trace_time_scale);
  plan.seed = seed;
  const size_t n = offsets_s.size();
  const double rate = plan.traffic.request_rate_rps;
  plan.rate_rps.assign(n, rate);
  if (plan.traffic.instant) {
    plan.interval_s.assign(n, 0.0);
    plan.offset_s.assign(n, 0.0);
    plan.anomaly.assign(n, Anomaly::kInstant);
    return plan;
  }
  plan.offset_s = offsets_s;
  plan.interval_s.resize(n);
  plan.anomaly.resize(n);
  double previous = 0;
  for (size_t i = 0; i < n; ++i) {
    plan.interval_s[i] = offsets_s[i] - previous;
    previous = offsets_s[i];
    // Burstiness anomalies enabled: any β > 0 does that in ClassifyInterval.
    plan.anomaly[i] = ClassifyInterval(plan.interval_s[i], rate, /*burstiness=*/1.0);
  }
  return plan;
}

}  // namespace surge::coordinator
