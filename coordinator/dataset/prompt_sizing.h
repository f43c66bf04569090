// The run's token counter (DatasetConfig.tokenizer; docs/DATASETS.md
// "Token counters"): the estimate leaves the payloads as they are; "server"
// and a SentencePiece FILE.model fit every synthetic and Mooncake prompt
// to its exact asked length before anything is sent.
#ifndef SURGE_COORDINATOR_DATASET_PROMPT_SIZING_H_
#define SURGE_COORDINATOR_DATASET_PROMPT_SIZING_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "coordinator/dataset/payload_source.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// The counter `tokenizer` names: ESTIMATE for "" and "estimate", SERVER for
// "server", else SENTENCEPIECE (a path).
surge::v1::TokenCounter TokenCounterOf(const std::string& tokenizer);

// True when `endpoint` ("" = the default /v1/chat/completions) is a chat
// endpoint (ends with "/chat/completions", as the worker decides).
bool IsChatEndpoint(const std::string& endpoint);

// `payloads` (made for config.num_prompts() requests) with their prompts
// fitted to the counter of config.dataset().tokenizer: unchanged for the
// estimate; with "server" the target (config.target(): base_url, model,
// endpoint, TLS, key, headers) is asked at its tokenize endpoint
// (client/tokenize_client.h), with a path the SentencePiece model counts.
// Logs the counter, the tokenize shape found, the set-up time, the calls
// per prompt and the memory the fitted texts take, and warns when some
// prompts could not be fitted exactly, and when an offline model sizes chat
// prompts (it cannot count the server's chat template).
// jsonl and sharegpt payloads are left as they are (with a warning), and
// without a base_url (surge plan) "server" leaves the payloads unfitted.
// Errors: INVALID_ARGUMENT naming --tokenizer (no tokenize endpoint, a file
// that is not a SentencePiece model); UNAVAILABLE when the
// target cannot be reached or fails mid-way. `clock` times the set-up.
absl::StatusOr<std::unique_ptr<PayloadSource>> SizePrompts(
    const surge::v1::RunConfig& config, std::unique_ptr<PayloadSource> payloads, Clock& clock);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_PROMPT_SIZING_H_
