// Where each request's payload comes from (R-MET-3; docs/DATASETS.md).
// Synthetic and Mooncake payloads are references (lengths, a prompt seed,
// shared-prefix block ids) that workers turn into text from the built-in
// corpus (common/prompt_builder.h); jsonl and sharegpt payloads carry their
// real prompt text inline.
#ifndef SURGE_COORDINATOR_DATASET_PAYLOAD_SOURCE_H_
#define SURGE_COORDINATOR_DATASET_PAYLOAD_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"

namespace surge::coordinator {

// What a traffic class (RunConfig.classes) gives each of its requests
// besides its payload: its name (for the record), the model it names and
// its extra header lines ("" / none = the target's).
struct TrafficClassTag {
  std::string name;
  std::string model;
  std::vector<std::string> headers;
};

// The payload of one request.
struct Payload {
  Payload() = default;
  Payload(uint32_t input_tokens_in, uint32_t max_tokens_in, uint64_t prompt_seed_in)
      : input_tokens(input_tokens_in), max_tokens(max_tokens_in), prompt_seed(prompt_seed_in) {}

  // Prompt length, approximate tokens (common/prompt_builder.h); for a real
  // prompt EstimateTokens(prompt_text).
  uint32_t input_tokens = 0;
  // max_tokens of the request.
  uint32_t max_tokens = 0;
  // Where in the corpus the prompt (after its prefix blocks) starts.
  uint64_t prompt_seed = 0;
  // The real prompt (jsonl, sharegpt); empty = built from the corpus.
  std::string prompt_text;
  // Shared-prefix block ids (Mooncake hash_ids), one per 512-token block.
  std::vector<uint64_t> prefix_block_ids;
  // Synthetic shared prefix: the first prefix_tokens of input_tokens are
  // the corpus text at prefix_seed (equal seeds, byte-identical text).
  // 0 = none.
  uint32_t prefix_tokens = 0;
  uint64_t prefix_seed = 0;
  // The request's traffic class, owned by its source; null without classes.
  const TrafficClassTag* traffic_class = nullptr;
};

// Copies a payload into the payload fields of an assignment (input_tokens,
// max_tokens, prompt_seed, prompt_text, prefix_block_ids, prefix_tokens,
// prefix_seed; its class's model and headers): the dispatcher's
// one way of doing it, so BuildAssignmentPrompt sees what the source meant.
void FillAssignmentPayload(Payload payload, surge::v1::Assignment* assignment);

// How a request's prompt was sized, for its record (asked_input_tokens,
// token_counter).
struct PromptSizing {
  uint32_t asked_input_tokens = 0;
  surge::v1::TokenCounter counter = surge::v1::TOKEN_COUNTER_ESTIMATE;
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
  // Human-readable notes for the log (e.g. the file was cycled).
  virtual const std::vector<std::string>& warnings() const = 0;
  // Trace replay: the planned offsets of requests 0..N-1, seconds,
  // non-decreasing, the first 0 (coordinator/plan/replay_schedule.h); null
  // unless the source was made with trace_replay.
  virtual const std::vector<double>* replay_offsets_s() const { return nullptr; }
  // The sizing of request `index` (< N): its input_tokens, counted by
  // TOKEN_COUNTER_DATASET for a real prompt text, else by the estimate.
  // Sources that fit prompts to a tokenizer say theirs.
  virtual PromptSizing Sizing(uint64_t index) const;
  // The traffic class of request `index` (< N); null without classes.
  virtual const TrafficClassTag* ClassOf(uint64_t /*index*/) const { return nullptr; }
};

// The payloads of a plan with traffic classes: request i is request
// class_request[i] of class class_index[i]'s own source (`sources[c]`, made
// for that class's requests), tagged with `tags[c]`. name() is the first
// class's; the warnings are every class's, each after its class's name.
std::unique_ptr<PayloadSource> MakeClassPayloadSource(
    std::vector<std::unique_ptr<PayloadSource>> sources, std::vector<TrafficClassTag> tags,
    std::vector<uint16_t> class_index, std::vector<uint64_t> class_request);

// Builds the source named by `dataset.dataset_name` for `num_requests`
// requests; `seed` is the run seed (length draws and prompt start words).
// - "synthetic"/"random": input length random_input_len and max_tokens
//   random_output_len, each drawn per request from random_len_dist
//   (length_distribution.h) with an engine of its own seeded from `seed`
//   (LengthEngineSeed), input then output for request 0, 1, ...
// - "jsonl": one request per line of dataset_path, in order: "prompt" (a
//   string) or "messages" (an OpenAI chat list; the contents are joined by a
//   blank line into one prompt text), optional "max_tokens" (else
//   random_output_len).
// - "sharegpt": a JSON array of {"conversations": [{"from", "value"}, ...]};
//   the first human turn is the prompt, max_tokens the estimated tokens of
//   the answer right after it (else random_output_len). Conversations without
//   a non-empty human turn are skipped, with one warning that counts them.
//   Read as a stream: only the first N usable conversations are kept.
// - "mooncake": one request per line of the Mooncake trace JSONL:
//   input_length → prompt tokens, output_length → max_tokens (0 → 1),
//   hash_ids → prefix_block_ids. With trace_replay the lines are sorted
//   stably by timestamp (a warning says when they were not in order) and
//   replay_offsets_s() gives (timestamp − earliest) · trace_time_scale / 1000.
// Files are read up to the N-th request; when N exceeds the file's requests
// they are reused from the top (request i uses row i mod rows) with a
// warning; in replay each reuse is shifted by the trace's span plus its mean
// interval, so the mean rate holds.
// Errors: INVALID_ARGUMENT naming dataset_path and the line (the
// conversation for sharegpt) for a missing file, a malformed line or a
// missing/invalid field.
absl::StatusOr<std::unique_ptr<PayloadSource>> MakePayloadSource(
    const surge::v1::DatasetConfig& dataset, uint64_t num_requests, uint64_t seed);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_PAYLOAD_SOURCE_H_
