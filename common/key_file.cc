#include "common/key_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace surge {

bool HasControlCharacters(const std::string& key) {
  for (char c : key) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

absl::StatusOr<std::string> ReadKeyFile(const std::string& path, absl::string_view field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(field, ": cannot read ", path));
  std::string key(absl::StripAsciiWhitespace(text.str()));
  if (key.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", path, " is empty"));
  if (HasControlCharacters(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", path, " holds control characters inside the key"));
  }
  return key;
}

}  // namespace surge
