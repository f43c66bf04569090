// Payloads whose prompts have exactly their asked token count
// (`--tokenizer server` or FILE.model; docs/DATASETS.md "Token counters"):
// every synthetic and Mooncake prompt is fitted before the run and sent as
// the assignment's prompt_text. The coordinator keeps the texts: each
// shared text (a synthetic prefix, a Mooncake block) once, plus each
// request's own words.
#ifndef SURGE_COORDINATOR_DATASET_FITTED_PAYLOADS_H_
#define SURGE_COORDINATOR_DATASET_FITTED_PAYLOADS_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dataset/prompt_fitter.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// What fitting `num_requests` prompts gave, besides the payloads.
struct FitReport {
  FitStats stats;
  uint64_t fitted_prompts = 0;  // synthetic and Mooncake prompts fitted
  uint64_t shared_texts = 0;    // distinct prefixes and blocks fitted
  uint64_t text_bytes = 0;      // bytes of fitted text the coordinator holds
};

// Fits the prompts of requests 0..num_requests-1 of `base` with `fitter`
// and returns the source that serves them, whose Sizing says `counter`:
// - a synthetic prompt: FitPrompt("", 0, its prompt_seed, input_tokens);
// - with prefix_tokens > 0: the prefix text (corpus words from
//   prefix_seed) fitted once per (prefix_seed, prefix_tokens) to exactly
//   prefix_tokens own tokens, byte-identical in every request that shares
//   it; then the request's own words from prompt_seed so that the whole
//   prompt is exactly input_tokens;
// - Mooncake (prefix_block_ids): every block that fits whole is the text
//   of its id (corpus words from id * 104729, as BuildAssignmentPrompt
//   places it) fitted once to exactly kPrefixBlockTokens own tokens; the
//   tokens left (after the empty prompt's) are the tail, corpus words
//   from the next id's place (or prompt_seed when the ids ran out), fitted
//   so that the whole prompt is exactly input_tokens;
// - a payload with its own prompt_text (jsonl, sharegpt) is left as it is.
// Errors: the counter's.
absl::StatusOr<std::unique_ptr<PayloadSource>> FitPayloads(std::unique_ptr<PayloadSource> base,
                                                           uint64_t num_requests,
                                                           PromptFitter& fitter,
                                                           surge::v1::TokenCounter counter,
                                                           FitReport* report);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_FITTED_PAYLOADS_H_
