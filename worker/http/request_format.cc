#include "worker/http/request_format.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/api_key.h"
#include "common/prompt_builder.h"

namespace surge::worker {
namespace {

constexpr char kDefaultEndpoint[] = "/v1/chat/completions";

// The endpoint of `target`, checked.
absl::StatusOr<std::string> CheckedEndpoint(const surge::v1::TargetConfig& target) {
  std::string endpoint = target.endpoint().empty() ? kDefaultEndpoint : target.endpoint();
  if (endpoint[0] != '/' || endpoint.find_first_of(" \r\n\t") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint: \"", endpoint,
                     "\" must be a path starting with '/', e.g. /v1/chat/completions"));
  }
  return endpoint;
}

// The extra header lines of `target`, parsed.
absl::StatusOr<std::vector<client::HeaderLine>> ParsedHeaders(
    const surge::v1::TargetConfig& target) {
  std::vector<client::HeaderLine> headers;
  for (int i = 0; i < target.headers_size(); ++i) {
    absl::StatusOr<client::HeaderLine> header = client::ParseHeaderLine(target.headers(i));
    if (!header.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("headers[", i, "]: ", std::string(header.status().message())));
    }
    headers.push_back(*std::move(header));
  }
  return headers;
}

}  // namespace

absl::StatusOr<RequestFormat> MakeRequestFormat(const surge::v1::TargetConfig& target,
                                                client::ParsedUrl url,
                                                std::optional<std::string> given_key) {
  absl::StatusOr<std::string> endpoint = CheckedEndpoint(target);
  if (!endpoint.ok()) return endpoint.status();
  if (!(target.request_timeout_s() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request_timeout_s: ", target.request_timeout_s(), " must be >= 0 (0 = no timeout)"));
  }
  absl::StatusOr<std::vector<client::HeaderLine>> headers = ParsedHeaders(target);
  if (!headers.ok()) return headers.status();
  absl::StatusOr<nlohmann::json> extra_body = client::ParseExtraBody(target.extra_body_json());
  if (!extra_body.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("extra_body_json: ", std::string(extra_body.status().message())));
  }
  absl::StatusOr<std::string> api_key =
      given_key.has_value() ? *std::move(given_key) : client::LoadApiKey(target);
  if (!api_key.ok()) return api_key.status();

  RequestFormat format;
  format.header_block = HeaderBlock(url, target.stream(), *api_key, *headers);
  format.target_path = url.path_prefix + *endpoint;
  format.url = std::move(url);
  format.kind = ApiKindForEndpoint(*endpoint);
  format.model = target.model();
  format.stream = target.stream();
  format.timeout_s = target.request_timeout_s();
  format.api_key = *std::move(api_key);
  format.extra_body = *std::move(extra_body);
  format.verify_peer = !target.insecure_skip_verify();
  return format;
}

std::string HeaderBlock(const client::ParsedUrl& url, bool stream, const std::string& api_key,
                        const std::vector<client::HeaderLine>& extra) {
  auto overridden = [&extra](const char* name) {
    for (const client::HeaderLine& h : extra) {
      if (absl::EqualsIgnoreCase(h.name, name)) return true;
    }
    return false;
  };
  std::string block = absl::StrCat("Host: ", url.HostHeader(), "\r\n");
  if (!overridden("User-Agent")) absl::StrAppend(&block, "User-Agent: surge\r\n");
  if (!overridden("Content-Type")) absl::StrAppend(&block, "Content-Type: application/json\r\n");
  if (!overridden("Accept")) {
    absl::StrAppend(&block, "Accept: ", stream ? "text/event-stream" : "application/json", "\r\n");
  }
  // Uncompressed answers: each event's time is its arrival, and no decoding
  // (a server that compresses anyway is decoded: body_decoder.h).
  if (!overridden("Accept-Encoding")) absl::StrAppend(&block, "Accept-Encoding: identity\r\n");
  if (!api_key.empty()) absl::StrAppend(&block, "Authorization: Bearer ", api_key, "\r\n");
  for (const client::HeaderLine& h : extra) absl::StrAppend(&block, h.name, ": ", h.value, "\r\n");
  return block;
}

ClassParts ClassPartsOf(const surge::v1::Assignment& assignment) {
  ClassParts parts;
  parts.model = assignment.model();
  for (const std::string& line : assignment.headers()) {
    absl::StatusOr<client::HeaderLine> header = client::ParseHeaderLine(line);
    if (header.ok())
      absl::StrAppend(&parts.header_lines, header->name, ": ", header->value, "\r\n");
  }
  for (const surge::v1::ChatMessage& m : assignment.history()) {
    parts.history.push_back(HistoryMessage{m.role(), m.content()});
  }
  return parts;
}

BuiltRequest BuildAssignmentRequest(const RequestFormat& format,
                                    const surge::v1::Assignment& assignment) {
  BuiltRequest built;
  std::string prompt = BuildAssignmentPrompt(assignment);
  built.estimated_input = EstimateTokens(prompt);
  for (const surge::v1::ChatMessage& m : assignment.history()) {
    built.estimated_input += EstimateTokens(m.content());
  }
  built.bytes = BuildHttpRequest(format, prompt, assignment.max_tokens(), assignment.index(),
                                 assignment.attempt(), ClassPartsOf(assignment));
  if (assignment.in_session()) built.session_prompt = std::move(prompt);
  return built;
}

std::string BuildHttpRequest(const RequestFormat& format, const std::string& prompt,
                             uint32_t max_tokens, uint64_t index, uint32_t attempt,
                             const ClassParts& parts) {
  const std::string& model = parts.model.empty() ? format.model : parts.model;
  const std::string body = BuildRequestBody(format.kind, model, prompt, max_tokens, format.stream,
                                            format.extra(), parts.history);
  return absl::StrCat("POST ", format.target_path, " HTTP/1.1\r\n", format.header_block,
                      parts.header_lines, "X-Surge-Request: ", index, "/", attempt, "\r\n",
                      "Content-Length: ", body.size(), "\r\n\r\n", body);
}

}  // namespace surge::worker
