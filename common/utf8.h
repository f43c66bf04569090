// Valid UTF-8 for text that comes from outside surge (server answers and
// error bodies, dataset files, names a server lists) before it enters a
// protobuf string field: proto3 string fields must hold valid UTF-8, and a
// message with invalid bytes in one is refused by the receiving side, which
// would lose the whole message (a batch of records). Pure.
#ifndef SURGE_COMMON_UTF8_H_
#define SURGE_COMMON_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace surge {

// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates U+D800..U+DFFF, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with every ill-formed sequence replaced by U+FFFD (one per maximal
// ill-formed subpart, the Unicode "substitution of maximal subparts"
// practice: "A\xFFB" -> "A\uFFFDB", a truncated 3-byte character -> one
// U+FFFD), then cut to at most `max_bytes` bytes at a character boundary
// (never inside a multi-byte character). Valid text shorter than
// `max_bytes` comes back unchanged. The result is always valid UTF-8.
std::string ToValidUtf8(std::string_view text, size_t max_bytes = std::string_view::npos);

// Makes `*text` valid UTF-8 in place (ToValidUtf8 without a length limit);
// returns true when it had to change it. Cheap when it is valid already.
bool MakeValidUtf8(std::string* text);

}  // namespace surge

#endif  // SURGE_COMMON_UTF8_H_
