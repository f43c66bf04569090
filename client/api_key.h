// Where the API key of a target comes from (R-REQ-1): a file or an
// environment variable, never the command line, never written out.
#ifndef SURGE_CLIENT_API_KEY_H_
#define SURGE_CLIENT_API_KEY_H_

#include <string>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::client {

// The API key for `target`: the contents of target.api_key_file when that is
// set (surrounding whitespace, e.g. the trailing newline, stripped), else
// $OPENAI_API_KEY (whitespace stripped) when set, else "" (no key). The
// caller sends it as "Authorization: Bearer <key>" and must never log it.
// Errors: INVALID_ARGUMENT "api_key_file: cannot read <path>: <why>",
// "api_key_file: <path> is empty", "api_key_file: <path> holds control
// characters inside the key", "OPENAI_API_KEY holds control characters";
// no message ever quotes the key.
absl::StatusOr<std::string> LoadApiKey(const surge::v1::TargetConfig& target);

// What an API key is replaced with in texts surge keeps.
inline constexpr const char* kRedactedApiKey = "[API key redacted]";

// Removes `api_key` from `text` (in place) before it is logged or recorded:
// servers quote a rejected key back ("Incorrect API key provided: sk-...").
// Every occurrence becomes kRedactedApiKey, and so does a tail of `text`
// that is the first 4 or more characters of the key (a quote cut short by a
// length limit). No-op for an empty key.
void RedactApiKey(std::string* text, const std::string& api_key);

}  // namespace surge::client

#endif  // SURGE_CLIENT_API_KEY_H_
