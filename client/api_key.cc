#include "client/api_key.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/key_file.h"

namespace surge::client {

absl::StatusOr<std::string> LoadApiKey(const surge::v1::TargetConfig& target) {
  if (!target.api_key_file().empty()) return ReadKeyFile(target.api_key_file(), "api_key_file");
  const char* env = std::getenv("OPENAI_API_KEY");
  if (env == nullptr) return std::string();
  std::string key(absl::StripAsciiWhitespace(env));
  if (HasControlCharacters(key)) {
    return absl::InvalidArgumentError("OPENAI_API_KEY holds control characters");
  }
  return key;
}

void RedactApiKey(std::string* text, const std::string& api_key) {
  if (api_key.empty() || text->empty()) return;
  for (size_t at = text->find(api_key); at != std::string::npos;
       at = text->find(api_key, at + std::strlen(kRedactedApiKey))) {
    text->replace(at, api_key.size(), kRedactedApiKey);
  }
  // A quote cut by a length limit leaves the key's first characters at the end.
  constexpr size_t kMinTail = 4;
  for (size_t n = std::min(api_key.size() - 1, text->size()); n >= kMinTail; --n) {
    if (text->compare(text->size() - n, n, api_key, 0, n) == 0) {
      text->replace(text->size() - n, n, kRedactedApiKey);
      break;
    }
  }
}

}  // namespace surge::client
