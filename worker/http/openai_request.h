// Request bodies for, and response parsing of, the OpenAI-compatible
// /v1/completions and /v1/chat/completions APIs (R-REQ-1, R-MET-1).
// Pure: JSON text in and out, no I/O.
#ifndef SURGE_WORKER_HTTP_OPENAI_REQUEST_H_
#define SURGE_WORKER_HTTP_OPENAI_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace surge::worker {

// Which of the two APIs an endpoint speaks.
enum class ApiKind {
  kChat,         // body has "messages"; answers carry choices[0].delta/message
  kCompletions,  // body has "prompt"; answers carry choices[0].text
};

// kChat when `endpoint` ends with "/chat/completions", else kCompletions.
ApiKind ApiKindForEndpoint(std::string_view endpoint);

// One earlier message of a multi-turn session (docs/SESSIONS.md), sent
// before the prompt: "user" or "assistant", and its text.
struct HistoryMessage {
  std::string_view role;
  std::string_view content;
};

// The JSON body of one request: {"model", "messages":[{"role":"user",
// "content":prompt}] or "prompt", "max_tokens", "stream"} and, when
// streaming, "stream_options":{"include_usage":true} so the server reports
// exact token counts. "model" is left out when `model` is empty. A non-null
// `extra` object (TargetConfig.extra_body_json, see ParseExtraBody) is then
// applied as an RFC 7386 merge patch: its members are added or replace the
// built ones, nested objects merge, and a null member removes one. A
// session's `history` goes before the prompt: as messages of their own
// (chat), or for a completion as text, each message and then the prompt
// separated by a blank line.
std::string BuildRequestBody(ApiKind kind, const std::string& model, const std::string& prompt,
                             uint32_t max_tokens, bool stream,
                             const nlohmann::json* extra = nullptr,
                             const std::vector<HistoryMessage>& history = {});

// The output-token cap a body built by BuildRequestBody(…, max_tokens, …,
// extra) asks for: the extra body's "max_completion_tokens" when it sets a
// number there (vLLM and OpenAI prefer it over max_tokens), else its
// "max_tokens" when it sets a number (0 when it removes it with null), else
// `max_tokens`.
uint32_t RequestedMaxTokens(uint32_t max_tokens, const nlohmann::json* extra);

// True when the extra body asks the server to ignore end-of-sequence
// ("ignore_eos": true, vLLM/SGLang): every answer should then be max_tokens
// long.
bool AsksIgnoreEos(const nlohmann::json* extra);

// Token counts a server reported in "usage".
struct Usage {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  // usage.prompt_tokens_details.cached_tokens (vLLM with
  // --enable-prompt-tokens-details, SGLang, OpenAI): prompt tokens served
  // from the server's prefix cache. Unset when the server did not say.
  std::optional<uint32_t> cached_tokens;
};

// What one streamed event or one whole (non-streamed) answer carried.
struct ParsedAnswer {
  // Generated text of choices[0], every channel: for chat, the reasoning
  // (delta/message .reasoning_content, else .reasoning, which reasoning
  // models stream first) followed by .content and then the tool calls'
  // text (.tool_calls[i].function .name and .arguments, in order); text for
  // completions. Empty when the event carries none (role-only delta,
  // usage-only chunk with no choices). Used for TTFT, ITL and the
  // output-token estimate.
  std::string content;
  // Bytes of `content` that are the answer itself (chat .content and tool
  // calls, or text): the rest is reasoning. 0 for a reasoning-only event.
  // Used for TTFC.
  size_t answer_bytes = 0;
  // Present when the JSON has a "usage" object with token counts.
  std::optional<Usage> usage;
  // True when choices[0].finish_reason is a string (the server says the
  // answer is complete: "stop", "length", ...); false when null or absent.
  bool finished = false;
  // That string when `finished`.
  std::string finish_reason;
  // choices[0].index; 0 when absent. Any other value means the server sends
  // several choices in one stream (surge asks for one: n = 1).
  uint32_t choice_index = 0;
};

// Parses the JSON of one SSE event of a streamed answer.
// Errors: INVALID_ARGUMENT "bad JSON in event: <first 120 bytes>" when
// `data` is not a JSON object (invalid UTF-8 inside a JSON string counts:
// JSON text is UTF-8); INTERNAL "server error: <message, at most 200
// bytes>" when it is an OpenAI-style {"error": {...}} object (vLLM sends
// those mid-stream). The quoted server text in every message is made valid
// UTF-8 (ToValidUtf8: U+FFFD for bad bytes, cut at a character boundary),
// so it can go into a proto string as it is.
absl::StatusOr<ParsedAnswer> ParseStreamEvent(ApiKind kind, std::string_view data);

// Parses a whole non-streamed answer body. Same errors as ParseStreamEvent;
// INVALID_ARGUMENT "no choices in answer" when it has neither choices nor usage.
absl::StatusOr<ParsedAnswer> ParseCompletionBody(ApiKind kind, std::string_view body);

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_OPENAI_REQUEST_H_
