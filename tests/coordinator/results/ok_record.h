// An OK record for the results tests: planned and sent at `sent_s`, with
// its TTFT, E2EL, output tokens (100 input tokens) and inter-token gaps.
#ifndef SURGE_TESTS_COORDINATOR_RESULTS_OK_RECORD_H_
#define SURGE_TESTS_COORDINATOR_RESULTS_OK_RECORD_H_

#include <cstdint>
#include <vector>

#include "surge/v1/record.pb.h"

namespace surge::coordinator {

inline surge::v1::RequestRecord OkRecord(uint64_t index, double sent_s, double ttft_s,
                                         double e2el_s, uint32_t tokens,
                                         std::vector<double> itl_s = {}) {
  surge::v1::RequestRecord r;
  r.set_index(index);
  r.set_status(surge::v1::OK);
  r.set_sent(true);
  r.set_planned_ns(static_cast<int64_t>(sent_s * 1e9));
  r.set_sent_ns(static_cast<int64_t>(sent_s * 1e9));
  r.set_ttft_ns(static_cast<int64_t>(ttft_s * 1e9));
  r.set_e2el_ns(static_cast<int64_t>(e2el_s * 1e9));
  r.set_output_tokens(tokens);
  r.set_input_tokens(100);
  for (double g : itl_s) r.add_itl_ns(static_cast<int64_t>(g * 1e9));
  return r;
}

}  // namespace surge::coordinator

#endif  // SURGE_TESTS_COORDINATOR_RESULTS_OK_RECORD_H_
