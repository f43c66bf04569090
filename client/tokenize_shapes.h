// The request and answer shapes of the tokenize endpoints surge knows
// (`--tokenizer server`): what to POST to {server root}/tokenize and how to
// read the token count from the answer. Pure: JSON text in and out.
#ifndef SURGE_CLIENT_TOKENIZE_SHAPES_H_
#define SURGE_CLIENT_TOKENIZE_SHAPES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace surge::client {

// Which server's tokenize endpoint answers.
enum class TokenizeShape {
  // vLLM and SGLang: {"model", "prompt"} or {"model", "messages"} (the chat
  // template applied) -> {"count": N, "tokens": [...], "max_model_len": M}.
  kVllm,
  // Hugging Face TGI: {"inputs": "..."} -> [{"id", "text", ...}, ...].
  kTgi,
  // llama.cpp server: {"content": "..."} -> {"tokens": [...]}.
  kLlamaCpp,
};

// "vLLM/SGLang", "TGI" or "llama.cpp": for the log and error messages.
const char* TokenizeShapeName(TokenizeShape shape);

// The body that asks `shape`'s endpoint for the tokens of `text`. With
// `chat` (only kVllm knows messages) the text is the content of one user
// message, {"role": "user", "content": text}, exactly the messages a chat
// request of surge carries (worker/http/openai_request.cc
// BuildRequestBody), so the server applies its chat template as it does for
// the request. "model" is left out when `model` is empty.
std::string TokenizeRequestBody(TokenizeShape shape, const std::string& model, bool chat,
                                std::string_view text);

// The token count in an answer of `shape`: kVllm "count" (else the length of
// "tokens"), kTgi the length of the top-level array, kLlamaCpp the length of
// "tokens". Errors: INVALID_ARGUMENT "not a <name> tokenize answer: <first
// 120 bytes>" when the body does not have that shape.
absl::StatusOr<uint32_t> ParseTokenizeCount(TokenizeShape shape, std::string_view body);

// The server root of a base URL's path prefix: the prefix without a
// trailing "/v1" ("" -> "", "/v1" -> "", "/a/v1" -> "/a", "/a" -> "/a").
// The tokenize endpoints live there, not under /v1.
std::string TokenizeRoot(std::string_view path_prefix);

}  // namespace surge::client

#endif  // SURGE_CLIENT_TOKENIZE_SHAPES_H_
