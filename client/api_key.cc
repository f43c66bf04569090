#include "client/api_key.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace surge::client {
namespace {

bool HasControlCharacters(const std::string& key) {
  for (char c : key) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> LoadApiKey(const surge::v1::TargetConfig& target) {
  const std::string& path = target.api_key_file();
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("api_key_file: cannot read ", path, ": ", std::strerror(errno)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
      return absl::InvalidArgumentError(absl::StrCat("api_key_file: cannot read ", path));
    }
    std::string key(absl::StripAsciiWhitespace(text.str()));
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("api_key_file: ", path, " is empty"));
    }
    if (HasControlCharacters(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("api_key_file: ", path, " holds control characters inside the key"));
    }
    return key;
  }
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
