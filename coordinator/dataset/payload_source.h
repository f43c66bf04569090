// Where each request's payload comes from (R-MET-3). The coordinator sends
// payload references (lengths and a prompt seed), never prompt text: workers
// build the text from the built-in corpus (common/prompt_builder.h).
#ifndef SURGE_COORDINATOR_DATASET_PAYLOAD_SOURCE_H_
#define SURGE_COORDINATOR_DATASET_PAYLOAD_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// The payload of one request.
struct Payload {
  // Prompt length, approximate tokens (common/prompt_builder.h).
  uint32_t input_tokens = 0;
  // max_tokens of the request.
  uint32_t max_tokens = 0;
  // Where in the corpus the prompt starts.
  uint64_t prompt_seed = 0;
};

// Payloads for request indices 0..N-1. Immutable after creation; thread-safe.
class PayloadSource {
 public:
  virtual ~PayloadSource() = default;
  // Payload of request `index` (< the N it was made for).
  virtual Payload At(uint64_t index) const = 0;
  // Name used in output file names (R-PLOT-1): the dataset file's stem, or
  // "synthetic" when there is no file.
  virtual const std::string& name() const = 0;
  // Human-readable notes for the log (e.g. the trace was cycled).
  virtual const std::vector<std::string>& warnings() const = 0;
};

// Builds the source named by `dataset.dataset_name` for `num_requests`
// requests; `seed` varies the prompt texts between runs.
// - "synthetic"/"random": every request has random_input_len tokens and
//   max_tokens random_output_len.
// - "mooncake": one request per line of the Mooncake trace JSONL at
//   dataset_path, in order: input_length → prompt tokens, output_length →
//   max_tokens (timestamps and hash_ids are not used yet). When N exceeds the
//   lines, the lines are reused from the top and a warning says so.
// Errors: INVALID_ARGUMENT naming dataset_path and the line for a missing
// file, a malformed line or a missing/negative length.
absl::StatusOr<std::unique_ptr<PayloadSource>> MakePayloadSource(
    const surge::v1::DatasetConfig& dataset, uint64_t num_requests, uint64_t seed);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_PAYLOAD_SOURCE_H_
