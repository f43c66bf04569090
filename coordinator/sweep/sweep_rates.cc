#include "coordinator/sweep/sweep_rates.h"

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace surge::coordinator {
namespace {

absl::Status Invalid(absl::string_view flag, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", what));
}

absl::StatusOr<std::vector<double>> ParseRateList(std::string_view text) {
  std::vector<double> rates;
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    part = absl::StripAsciiWhitespace(part);
    double r = 0;
    if (!absl::SimpleAtod(part, &r) || !std::isfinite(r)) {
      return Invalid("--request-rates", absl::StrCat("'", part,
                                                     "' is not a number; give increasing rates "
                                                     "in requests/s, e.g. 2,4,8,16"));
    }
    if (r < kMinSweepRateRps) {
      return Invalid("--request-rates",
                     absl::StrCat(part, " is below ", kMinSweepRateRps,
                                  " requests/s (surge run would send everything at once)"));
    }
    if (!rates.empty() && r <= rates.back()) {
      return Invalid("--request-rates",
                     absl::StrCat("rates must increase; ", part, " follows ", rates.back()));
    }
    rates.push_back(r);
  }
  return rates;
}

absl::StatusOr<std::vector<double>> RangeRates(const surge::v1::SweepConfig& s) {
  if (!s.has_sweep_start() || !s.has_sweep_end() || !s.has_sweep_steps()) {
    return Invalid("--sweep-start/--sweep-end/--sweep-steps",
                   "give all three (e.g. --sweep-start 2 --sweep-end 32 --sweep-steps 5)");
  }
  const double a = s.sweep_start(), b = s.sweep_end();
  if (b <= a) {
    return Invalid("--sweep-end", absl::StrCat(b, " must be above --sweep-start ", a));
  }
  if (a < kMinSweepRateRps) {
    return Invalid("--sweep-start", absl::StrCat(a, " is below ", kMinSweepRateRps,
                                                 " requests/s (surge run would send everything "
                                                 "at once)"));
  }
  const bool geometric = s.sweep_scale() == "geometric";
  const uint32_t k = s.sweep_steps();
  std::vector<double> rates;
  for (uint32_t i = 0; i < k; ++i) {
    const double f = static_cast<double>(i) / (k - 1);
    rates.push_back(i + 1 == k ? b : geometric ? a * std::pow(b / a, f) : a + (b - a) * f);
  }
  return rates;
}

}  // namespace

std::string RateText(double rps) {
  return std::fabs(rps) >= 1000 ? absl::StrFormat("%.0f", rps) : absl::StrFormat("%.4g", rps);
}

absl::StatusOr<std::vector<double>> SweepRates(const surge::v1::SweepConfig& s) {
  const bool range = s.has_sweep_start() || s.has_sweep_end() || s.has_sweep_steps();
  if (!s.request_rates().empty() && range) {
    return Invalid("--request-rates",
                   "give either a list or --sweep-start/--sweep-end/--sweep-steps, not both");
  }
  if (!s.request_rates().empty()) return ParseRateList(s.request_rates());
  if (range) return RangeRates(s);
  if (s.slo_search()) return std::vector<double>{};
  return Invalid("--request-rates",
                 "a sweep needs its rates: --request-rates 2,4,8 or --sweep-start R0 --sweep-end "
                 "R1 --sweep-steps K (or --slo-search)");
}

absl::StatusOr<SearchResolution> ParseSearchResolution(std::string_view text) {
  absl::string_view t = absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  SearchResolution r;
  r.relative = absl::ConsumeSuffix(&t, "%");
  double v = 0;
  if (!absl::SimpleAtod(t, &v) || !std::isfinite(v) || v <= 0 || (r.relative && v >= 100)) {
    return Invalid("--search-resolution",
                   absl::StrCat("'", std::string(text),
                                "' must be a share of the rate below 100% (e.g. 5%) or a rate in "
                                "requests/s > 0 (e.g. 0.5)"));
  }
  r.value = r.relative ? v / 100 : v;
  return r;
}

absl::Status CheckSweepConfig(const surge::v1::SweepConfig& sweep, bool has_goodput) {
  std::vector<std::string> problems;
  if (absl::StatusOr<std::vector<double>> rates = SweepRates(sweep); !rates.ok()) {
    problems.emplace_back(rates.status().message());
  }
  if (absl::StatusOr<SearchResolution> r = ParseSearchResolution(sweep.search_resolution());
      !r.ok()) {
    problems.emplace_back(r.status().message());
  }
  if (sweep.slo_search() && !has_goodput) {
    problems.emplace_back(
        "--slo-search: needs the objective: --goodput ttft:MS [tpot:MS] [e2el:MS] (with "
        "--goodput-fraction, default 0.95)");
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

}  // namespace surge::coordinator
