// What the simulated server answers, without the sockets: the checks of its
// options, the parse of a completion request, the JSON of each answer, the
// fault each request gets and the pieces a split answer is written in.
// Pure.
#ifndef SURGE_SIMSERVER_ANSWER_MODEL_H_
#define SURGE_SIMSERVER_ANSWER_MODEL_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "simserver/sim_tokenizer.h"
#include "surge/v1/config.pb.h"

namespace surge::simserver {

// Output tokens when the request names no max_tokens (OpenAI's legacy default).
inline constexpr int64_t kDefaultMaxTokens = 16;
// Upper bound on max_tokens, so a typo cannot keep a stream open for days.
inline constexpr int64_t kMaxMaxTokens = 1 << 20;
// The text of every generated token: 4 characters = 1 token by EstimateTokens.
inline constexpr char kTokenText[] = " tok";
// The function a tool-call answer calls when the request's tools name none.
inline constexpr char kDefaultToolName[] = "sim_tool";
// Fault injection: the payload of a malformed event and the message of an
// error event.
inline constexpr char kMalformedPayload[] = "surge-sim malformed chunk";
inline constexpr char kEngineFailure[] = "simulated engine failure";

// The checks SimServer::Create makes before it binds: finite delays >= 0,
// threads >= 1, a model name, both TLS files or neither, each fault
// fraction in [0, 1] and their sum <= 1, max_num_seqs <= 1048576 and, when
// it is > 0, decode_ms_base + decode_ms_per_seq > 0. Errors: INVALID_ARGUMENT naming
// the field.
absl::Status CheckSimServerConfig(const surge::v1::SimServerConfig& config);

// A milliseconds option as a duration, rounded to the nanosecond.
std::chrono::nanoseconds MsToNanos(double ms);

// A validated /v1/(chat/)completions request.
struct CompletionRequest {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  int64_t max_tokens = kDefaultMaxTokens;
  // The prompt's tokens as the server's tokenizer counts them (chat: the
  // template included), and their ids (equal prompts, equal ids).
  uint32_t prompt_tokens = 0;
  std::vector<uint64_t> prompt_token_ids;
  std::string model;
  // Prompt tokens found in the server's prefix cache (simserver/prefix_cache.h),
  // set by the server when its cache is on: then the usage carries
  // prompt_tokens_details.cached_tokens. Unset = no cache, no details.
  std::optional<uint32_t> cached_tokens;
  // A chat request with "tools" (and "tool_choice" not "none"): the answer
  // is one call of `tool_name` instead of text (AnswerWriter).
  bool tool_calls = false;
  std::string tool_name;
};

// Reads a completion request's body: "messages" (chat) or "prompt",
// max_tokens / max_completion_tokens (1..kMaxMaxTokens, the latter wins),
// stream, stream_options.include_usage, model (default `default_model`);
// the prompt's tokens counted by `tokenizer`. For chat, a non-empty "tools"
// array asks for a tool call (unless "tool_choice" is "none"): of the
// function "tool_choice" names ({"type":"function","function":{"name"}}),
// else of the first tool's function.name, else kDefaultToolName.
// Errors: INVALID_ARGUMENT saying what is wrong (the 400 answer's message).
absl::StatusOr<CompletionRequest> ParseCompletionRequest(bool chat, const std::string& body,
                                                         const std::string& default_model,
                                                         const SimTokenizer& tokenizer);

// An OpenAI-style error body {"error":{"message","type","code"}}.
std::string ErrorBody(const std::string& message, const char* type, unsigned code);

// Builds the JSON documents of one answer: id from the request's serial
// number, "created" = `created_unix_s` (seconds since the epoch).
//
// A text answer of n tokens is n times kTokenText, finish_reason "length".
// A tool-call answer (req.tool_calls) of n tokens is one call, id
// "call_sim_<serial>", of req.tool_name with the arguments
// {"text":"<(n-1) times kTokenText>"} ("{}" for n = 1), finish_reason
// "tool_calls", message.content null. Streamed, token 0's delta carries
// the call's index, id, type, name and the arguments' opening {"text":"
// ("{}" when n = 1), tokens 1..n-2 one kTokenText of the arguments each,
// and token n-1 the last kTokenText with the closing "}: n events, so the
// stream keeps the text answer's timing.
class AnswerWriter {
 public:
  AnswerWriter(const CompletionRequest& req, uint64_t serial, int64_t created_unix_s);

  // Stream chunk: for chat `delta` is the delta object; for completions the
  // text is delta["content"]. finish_reason is null unless `last` ("length",
  // or "tool_calls" for a tool-call answer).
  std::string Chunk(const nlohmann::json& delta, bool last) const;
  // The delta object of token k (0 <= k < max_tokens) of a chat stream:
  // {"content": kTokenText}, or the tool call's piece.
  nlohmann::json TokenDelta(int64_t k) const;
  // The last chunk of a stream with include_usage: no choices, the usage.
  std::string UsageChunk() const;
  // The whole non-streamed answer with its usage.
  std::string Whole() const;

 private:
  nlohmann::json Base(const char* object, nlohmann::json choices) const;
  const char* FinishReason() const { return req_.tool_calls ? "tool_calls" : "length"; }
  // The whole tool call of a non-streamed answer.
  nlohmann::json ToolCall() const;
  const CompletionRequest& req_;
  std::string id_;
  std::string call_id_;
  int64_t created_;
};

// The stream's token events, each built once: token k's chunk
// (AnswerWriter::Chunk of TokenDelta(k), the last one with its
// finish_reason). Tokens 1..n-2 share one text.
class TokenEvents {
 public:
  TokenEvents(const AnswerWriter& writer, int64_t max_tokens);
  const std::string& Event(int64_t k) const;

 private:
  int64_t n_;
  std::string first_, middle_, last_;
};

// The fault kinds, in the order they take their slices of [0, 1).
enum class Fault { kNone, k429, k500, k503, kReset, kMalformed, kStall, kSplit, kErrorEvent };

// Whether the fault comes after some tokens of a stream (not at once).
bool IsMidStream(Fault fault);

// Sizes of the pieces of a split answer (1..11 bytes): deterministic per
// request.
class PieceSizes {
 public:
  explicit PieceSizes(uint64_t seed) : state_(seed) {}
  size_t Next();

 private:
  uint64_t state_;
};

// Which fault each valid completion request gets: the n-th one (n = 0,
// 1, ...) gets the kind whose slice holds u_n, a uniform [0, 1) number
// that depends only on (fault_seed, n); the kinds take consecutive slices
// of their fractions' sizes in Fault's order, and u_n beyond them means no
// fault.
class FaultPlan {
 public:
  explicit FaultPlan(const surge::v1::SimServerConfig& config);
  Fault Draw(uint64_t n) const;
  // The piece sizes of the n-th request's split answer.
  PieceSizes SplitPieces(uint64_t n) const;

 private:
  uint64_t seed_;
  std::vector<std::pair<double, Fault>> slices_;
};

}  // namespace surge::simserver

#endif  // SURGE_SIMSERVER_ANSWER_MODEL_H_
