#include "coordinator/plan/steady_state.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace surge::coordinator {
namespace {

constexpr absl::string_view kForm =
    "must be A:B, seconds of the plan (10:50) or fractions of its span written with a decimal "
    "point (0.1:0.9), with 0 <= A < B";

// One bound: a finite number >= 0.
absl::StatusOr<double> Bound(absl::string_view text) {
  double v = 0;
  const absl::string_view t = absl::StripAsciiWhitespace(text);
  if (t.empty() || !absl::SimpleAtod(t, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", t, "\" is not a number: ", kForm));
  }
  if (v < 0) return absl::InvalidArgumentError(absl::StrCat(t, " is negative: ", kForm));
  return v;
}

bool HasDecimalPoint(absl::string_view text) {
  return text.find('.') != absl::string_view::npos;
}

}  // namespace

absl::StatusOr<std::optional<SteadyStateSpec>> ParseSteadyState(absl::string_view text) {
  if (absl::StripAsciiWhitespace(text).empty()) return std::optional<SteadyStateSpec>();
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 2) return absl::InvalidArgumentError(std::string(kForm));
  absl::StatusOr<double> a = Bound(parts[0]);
  if (!a.ok()) return a.status();
  absl::StatusOr<double> b = Bound(parts[1]);
  if (!b.ok()) return b.status();
  if (!(*a < *b)) {
    return absl::InvalidArgumentError(
        absl::StrCat("A (", *a, ") must be below B (", *b, "): ", kForm));
  }
  SteadyStateSpec spec;
  spec.a = *a;
  spec.b = *b;
  spec.fractions = *a <= 1 && *b <= 1 && HasDecimalPoint(parts[0]) && HasDecimalPoint(parts[1]);
  return std::optional<SteadyStateSpec>(spec);
}

absl::StatusOr<SteadyStateWindow> ResolveSteadyState(const SteadyStateSpec& spec,
                                                     absl::string_view text,
                                                     const std::vector<double>& offsets_s) {
  const double span_s = offsets_s.empty() ? 0 : offsets_s.back();
  SteadyStateWindow w;
  w.spec = std::string(text);
  w.start_s = spec.fractions ? spec.a * span_s : spec.a;
  w.end_s = spec.fractions ? spec.b * span_s : spec.b;
  w.includes_end = spec.fractions && spec.b == 1.0;
  // Offsets are non-decreasing: the window is one contiguous run of them.
  const auto first = std::lower_bound(offsets_s.begin(), offsets_s.end(), w.start_s);
  auto last = w.includes_end ? std::upper_bound(first, offsets_s.end(), w.end_s)
                             : std::lower_bound(first, offsets_s.end(), w.end_s);
  w.requests = static_cast<uint64_t>(last - first);
  if (w.requests == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the window [", w.start_s, ", ", w.end_s, ") s holds no planned request (the plan's ",
        offsets_s.size(), " requests are planned from 0 to ", span_s,
        " s): choose a window inside the plan"));
  }
  return w;
}

}  // namespace surge::coordinator
