// A sweep made by hand for the sweep's tests and the sweep page's browser
// test: three points at 10, 20 and 30 RPS (ok, invalid with a cause,
// saturated) against a goodput objective of 95 %.
#ifndef SURGE_TESTS_TESTING_SAMPLE_SWEEP_H_
#define SURGE_TESTS_TESTING_SAMPLE_SWEEP_H_

#include <string>

#include "coordinator/sweep/sweep_report.h"

namespace surge::testing {

using coordinator::PointStatus;
using coordinator::SweepObjective;
using coordinator::SweepPoint;
using coordinator::SweepReport;

// A point at `rate` whose TTFT p50/p99 are 10/20 ms per RPS; an invalid one
// has lateness p99 250 ms and the cause "cpu_saturated".
inline SweepPoint MakeSweepPoint(int number, double rate, PointStatus status,
                                 double goodput_fraction) {
  SweepPoint p;
  p.number = number;
  p.rate_rps = rate;
  p.status = status;
  p.goodput_fraction = goodput_fraction;
  p.ttft_p50_ms = 10 * rate;
  p.ttft_p99_ms = 20 * rate;
  p.request_throughput_rps = rate;
  p.requests = static_cast<uint64_t>(rate * 10);
  p.folder = "point_" + std::to_string(number);
  p.certificate.valid = status != PointStatus::kInvalid;
  p.certificate.achieved_vs_intended = status == PointStatus::kInvalid ? 0.7 : 1.0;
  p.certificate.lateness_p99_ms = status == PointStatus::kInvalid ? 250 : 0.05;
  p.certificate.lateness_limit_ms = 10;
  if (status == PointStatus::kInvalid) {
    p.certificate.cause = "cpu_saturated";
    p.note = "lateness p99 250 ms above the limit 10 ms";
  }
  return p;
}

inline const SweepObjective kSampleObjective{.has_goodput = true, .goodput_fraction = 0.95};

inline SweepReport SampleSweepReport() {
  SweepReport r;
  r.sweep.set_request_rates("10,20,30");
  r.goodput.set_ttft_ms(500);
  r.objective = kSampleObjective;
  r.points = {MakeSweepPoint(1, 10, PointStatus::kOk, 1.0),
              MakeSweepPoint(2, 20, PointStatus::kInvalid, 1.0),
              MakeSweepPoint(3, 30, PointStatus::kSaturated, 0.3)};
  r.points[2].note = "the server saturated at 11.00 s";
  r.answer = coordinator::ListAnswer(r.points, r.objective);
  r.answer_text = coordinator::AnswerText(*r.answer, r.points);
  r.finished = true;
  return r;
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_SAMPLE_SWEEP_H_
