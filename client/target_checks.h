// Checks of the TargetConfig fields that shape every request (R-REQ-1):
// extra headers and the extra body. Shared by the run validator
// (coordinator/config, configuration errors) and the worker's HTTP sender
// (worker/http), so both apply the same rules. Header-only and pure: no I/O,
// no Beast.
#ifndef SURGE_CLIENT_TARGET_CHECKS_H_
#define SURGE_CLIENT_TARGET_CHECKS_H_

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace surge::client {

// One extra header of TargetConfig.headers.
struct HeaderLine {
  std::string name;
  std::string value;
};

// Parses "Name: value" (TargetConfig.headers, flag --header). The name is an
// RFC 9110 token; the value has its surrounding blanks trimmed and no control
// characters other than tab. Refused names (any case): Host,
// Content-Length, Transfer-Encoding (the client sets them) and Authorization
// (the key comes from api_key_file or OPENAI_API_KEY, so that it stays out of
// argv and of the run folder). Errors: INVALID_ARGUMENT saying what is wrong;
// the message never quotes the value (it may be a secret).
inline absl::StatusOr<HeaderLine> ParseHeaderLine(const std::string& line) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError("must be \"Name: value\", e.g. \"X-Request-Source: surge\"");
  }
  HeaderLine header;
  header.name = line.substr(0, colon);
  if (header.name.empty()) return absl::InvalidArgumentError("has an empty header name");
  for (char c : header.name) {
    const bool token = absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                       std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!token) {
      return absl::InvalidArgumentError(
          "has a header name with characters other than letters, digits and !#$%&'*+-.^_`|~");
    }
  }
  const std::string lower = absl::AsciiStrToLower(header.name);
  if (lower == "host" || lower == "content-length" || lower == "transfer-encoding") {
    return absl::InvalidArgumentError(
        absl::StrCat("sets ", header.name, ", which the client sets itself"));
  }
  if (lower == "authorization") {
    return absl::InvalidArgumentError(
        "sets Authorization; give the API key with --api-key-file (api_key_file) or the "
        "OPENAI_API_KEY environment variable instead");
  }
  header.value = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  for (char c : header.value) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat("has control characters in the value of ", header.name));
    }
  }
  return header;
}

// Parses TargetConfig.extra_body_json (flag --extra-body): "" gives null (no
// extra body); otherwise the text must be a JSON object that does not set
// "model", "stream", "messages" or "prompt": surge sets those itself, names
// the model in the run folder and summary, and reads answers according to
// TargetConfig.stream. "n" and "best_of" may only be 1 (or null): surge
// measures one generated sequence per request. Errors: INVALID_ARGUMENT
// saying what is wrong.
inline absl::StatusOr<nlohmann::json> ParseExtraBody(const std::string& text) {
  if (text.empty()) return nlohmann::json();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("is not valid JSON: ", e.what()));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        "must be a JSON object, e.g. {\"temperature\":0,\"ignore_eos\":true}");
  }
  // The fields surge itself sets and names in its folder and summary.
  static constexpr std::pair<const char*, const char*> kOwnFields[] = {
      {"model", "use the model setting (flag --model, YAML key model)"},
      {"stream", "use the stream setting (YAML key stream)"},
      {"messages", "the prompts come from the dataset (flag --dataset-name)"},
      {"prompt", "the prompts come from the dataset (flag --dataset-name)"},
  };
  for (const auto& [field, instead] : kOwnFields) {
    if (json.contains(field)) {
      return absl::InvalidArgumentError(
          absl::StrCat("must not set \"", field, "\" (surge sets it and reports it); ", instead));
    }
  }
  // Fields that make the server generate several sequences per request: n
  // choices stream interleaved in one answer, and surge measures one
  // (TTFT, ITL and tokens per request); best_of > 1 generates that many. 1
  // (or null, the server's default) is allowed.
  for (const char* field : {"n", "best_of"}) {
    auto it = json.find(field);
    if (it == json.end() || it->is_null()) continue;
    const bool one = it->is_number() && it->get<double>() == 1.0;
    if (!one) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sets \"", field, "\": ", it->dump(),
          "; surge measures one answer per request, so only 1 is allowed (several choices "
          "stream interleaved, and their gaps are not inter-token latencies); send more "
          "requests instead"));
    }
  }
  return json;
}

}  // namespace surge::client

#endif  // SURGE_CLIENT_TARGET_CHECKS_H_
