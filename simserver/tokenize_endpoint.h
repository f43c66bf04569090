// The built-in server's tokenize endpoint, in vLLM's shape: POST /tokenize
// with {"model"?, "prompt": text (or a list, as /v1/completions takes)} or
// {"model"?, "messages": [...]} (the chat template applied, as
// /v1/chat/completions counts it) answers {"count": N, "tokens": [ids mod
// kSimVocabularySize],
// "max_model_len": kSimMaxModelLen}. The count is exactly the
// usage.prompt_tokens a completion request with that prompt (or those
// messages) gets. Pure.
#ifndef SURGE_SIMSERVER_TOKENIZE_ENDPOINT_H_
#define SURGE_SIMSERVER_TOKENIZE_ENDPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "simserver/sim_tokenizer.h"

namespace surge::simserver {

// The context length the endpoint reports.
inline constexpr uint32_t kSimMaxModelLen = 1 << 20;
// The endpoint's token ids are the tokenizer's ids modulo this.
inline constexpr uint64_t kSimVocabularySize = 1 << 17;

// The answer body for a tokenize request body. Errors: INVALID_ARGUMENT as
// ParseCompletionRequest gives them (the 400 answer's message).
absl::StatusOr<std::string> TokenizeAnswer(const std::string& body,
                                           const std::string& default_model,
                                           const SimTokenizer& tokenizer);

}  // namespace surge::simserver

#endif  // SURGE_SIMSERVER_TOKENIZE_ENDPOINT_H_
