// A secret kept in a file (an API key): read once, whitespace around it
// stripped, never quoted in a message.
#ifndef SURGE_COMMON_KEY_FILE_H_
#define SURGE_COMMON_KEY_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace surge {

// Whether `key` holds a control character (< 0x20 or 0x7f): such a key
// cannot go in an HTTP header.
bool HasControlCharacters(const std::string& key);

// The contents of the file at `path` with surrounding whitespace (e.g. the
// trailing newline) stripped. `field` names the option in errors. Errors:
// INVALID_ARGUMENT "<field>: cannot read <path>: <why>", "<field>: <path> is
// empty", "<field>: <path> holds control characters inside the key"; no
// message ever quotes the key.
absl::StatusOr<std::string> ReadKeyFile(const std::string& path, absl::string_view field);

}  // namespace surge

#endif  // SURGE_COMMON_KEY_FILE_H_
