// What every request the sender makes to one target looks like: request
// line, headers and JSON body, checked once from the TargetConfig. Pure: no
// I/O (the API key file is read once, by MakeRequestFormat).
#ifndef SURGE_WORKER_HTTP_REQUEST_FORMAT_H_
#define SURGE_WORKER_HTTP_REQUEST_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/target_checks.h"
#include "client/url.h"
#include "nlohmann/json.hpp"
#include "surge/v1/config.pb.h"
#include "surge/v1/wire.pb.h"
#include "worker/http/openai_request.h"

namespace surge::worker {

// The target's request settings, checked.
struct RequestFormat {
  client::ParsedUrl url;
  // The request target: url.path_prefix + the endpoint.
  std::string target_path;
  ApiKind kind = ApiKind::kChat;
  std::string model;  // "" leaves "model" out of the body
  bool stream = true;
  double timeout_s = 0;  // 0: no timeout
  // Every header line but Content-Length (HeaderBlock); holds the API key:
  // never log it.
  std::string header_block;
  std::string api_key;        // "" = none; kept to redact it from error texts
  nlohmann::json extra_body;  // null: none
  bool verify_peer = true;

  // The extra body for BuildRequestBody and friends; null when none.
  const nlohmann::json* extra() const { return extra_body.is_null() ? nullptr : &extra_body; }
};

// The format of `target`'s requests, whose base URL parsed as `url`. An
// empty endpoint means "/v1/chat/completions".
// Errors (INVALID_ARGUMENT unless said, checked in this order): an endpoint
// that does not start with "/" or holds white space ("endpoint: ..."), a
// negative request_timeout_s ("request_timeout_s: ..."), a bad header
// ("headers[i]: ..."), bad extra_body_json ("extra_body_json: ..."), and
// LoadApiKey's errors (an unreadable api_key_file). `api_key`, when given,
// is the key to send (handed over by the coordinator): no key file or
// environment variable is read.
absl::StatusOr<RequestFormat> MakeRequestFormat(const surge::v1::TargetConfig& target,
                                                client::ParsedUrl url,
                                                std::optional<std::string> api_key = std::nullopt);

// The headers of every request but Content-Length, each ending in CRLF:
// Host, User-Agent: surge, Content-Type, Accept and Accept-Encoding:
// identity (unless `extra` names them, case-insensitively), Authorization: Bearer <key> when there
// is a key, then `extra` in order.
std::string HeaderBlock(const client::ParsedUrl& url, bool stream, const std::string& api_key,
                        const std::vector<client::HeaderLine>& extra);

// What an assignment changes in its request beyond the prompt: its traffic
// class's model and header lines after the target's (docs/TRAFFIC.md
// "Traffic classes"), and a session turn's history (docs/SESSIONS.md).
struct ClassParts {
  std::string model;         // "" = the format's model
  std::string header_lines;  // "Name: value\r\n" each; "" = none
  // Views into the assignment's history: valid while it lives.
  std::vector<HistoryMessage> history;
};

// The parts an assignment carries (Assignment.model, .headers, .history); a
// header that is not "Name: value" (the coordinator checked them) is left
// out.
ClassParts ClassPartsOf(const surge::v1::Assignment& assignment);

// One assignment's request, built: its bytes (BuildHttpRequest of its prompt,
// BuildAssignmentPrompt, and its parts), EstimateTokens of all it sends as
// input (the history's texts and the prompt), and for a session turn
// (Assignment.in_session) the prompt text itself, for the next turn's
// history.
struct BuiltRequest {
  std::string bytes;
  uint32_t estimated_input = 0;
  std::string session_prompt;
};
BuiltRequest BuildAssignmentRequest(const RequestFormat& format,
                                    const surge::v1::Assignment& assignment);

// The bytes of one request: "POST <target_path> HTTP/1.1", the header
// block (then `parts`' header lines), "X-Surge-Request: INDEX/ATTEMPT" (so
// a server's log can tell whether one request arrived twice),
// Content-Length, and the body BuildRequestBody makes for `prompt` and
// `max_tokens` (with `parts`' model when it has one).
std::string BuildHttpRequest(const RequestFormat& format, const std::string& prompt,
                             uint32_t max_tokens, uint64_t index, uint32_t attempt,
                             const ClassParts& parts = {});

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_REQUEST_FORMAT_H_
