#include "common/utf8.h"

#include <cstdint>

namespace surge {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed character at the start of `s` (1..4), or 0 when
// it is ill-formed; then `*bad` is the length of its maximal ill-formed
// subpart (1..3), the bytes one U+FFFD replaces. `s` is not empty.
size_t CharLength(std::string_view s, size_t* bad) {
  const auto byte = [&s](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t need = 0;
  uint8_t lo = 0x80;  // allowed range of the second byte
  uint8_t hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0) lo = 0xA0;  // no overlong forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0) lo = 0x90;  // no overlong forms
    if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    *bad = 1;  // a continuation byte, C0, C1 or F5..FF
    return 0;
  }
  for (size_t i = 1; i < need; ++i) {
    const uint8_t b = i < s.size() ? byte(i) : 0;
    const bool fits = i < s.size() && (i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF));
    if (!fits) {
      *bad = i;
      return 0;
    }
  }
  return need;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    // Runs of ASCII are the common case.
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t bad = 0;
    const size_t len = CharLength(text.substr(i), &bad);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string ToValidUtf8(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(text.size() < max_bytes ? text.size() : max_bytes);
  size_t i = 0;
  while (i < text.size()) {
    size_t bad = 0;
    const size_t len = CharLength(text.substr(i), &bad);
    const std::string_view piece = len > 0 ? text.substr(i, len) : kReplacement;
    if (out.size() + piece.size() > max_bytes) break;
    out.append(piece);
    i += len > 0 ? len : bad;
  }
  return out;
}

bool MakeValidUtf8(std::string* text) {
  if (IsValidUtf8(*text)) return false;
  *text = ToValidUtf8(*text);
  return true;
}

}  // namespace surge
