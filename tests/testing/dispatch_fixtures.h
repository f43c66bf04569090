// Small fixtures shared by the dispatcher tests: a payload source that
// needs no dataset and a constant-rate plan.
#ifndef SURGE_TESTS_TESTING_DISPATCH_FIXTURES_H_
#define SURGE_TESTS_TESTING_DISPATCH_FIXTURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/dataset/payload_source.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"

namespace surge::testing {

// Every request: 10 input and 4 output tokens, the index as the prompt seed.
class FixedPayloads final : public surge::coordinator::PayloadSource {
 public:
  surge::coordinator::Payload At(uint64_t index) const override {
    return surge::coordinator::Payload{10, 4, index};
  }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  std::string name_ = "synthetic";
  std::vector<std::string> warnings_;
};

// `n` requests at `rate_rps`, evenly spaced (burstiness 0), seed 0.
inline surge::coordinator::ArrivalSchedule ConstantPlan(double rate_rps, uint64_t n) {
  surge::coordinator::ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = rate_rps;
  return *surge::coordinator::BuildArrivalSchedule(t, n, 0);
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_TESTING_DISPATCH_FIXTURES_H_
