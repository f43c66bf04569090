#include "coordinator/plan/number_format.h"

#include <charconv>
#include <cmath>

namespace surge::coordinator {

std::string FormatShort(double v) {
  char buf[64];
  const double a = std::fabs(v);
  const auto fmt =
      (a == 0 || (a >= 1e-4 && a < 1e15)) ? std::chars_format::fixed : std::chars_format::general;
  const auto res = std::to_chars(buf, buf + sizeof(buf), v, fmt);
  return std::string(buf, res.ptr);
}

std::string FormatCount(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace surge::coordinator
