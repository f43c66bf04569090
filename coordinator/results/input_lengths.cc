#include "coordinator/results/input_lengths.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

using surge::v1::TokenCounter;

constexpr char kRule[] =
    "OK records whose server reported usage.prompt_tokens: asked = the plan's length "
    "(asked_input_tokens), reported = the server's count (input_tokens)";

double Ratio(uint64_t sum, uint64_t n) {
  return n == 0 ? std::numeric_limits<double>::quiet_NaN()
                : static_cast<double>(sum) / static_cast<double>(n);
}

nlohmann::json Number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

const char* TokenCounterLabel(TokenCounter counter) {
  switch (counter) {
    case surge::v1::TOKEN_COUNTER_ESTIMATE:
      return "estimate";
    case surge::v1::TOKEN_COUNTER_SERVER:
      return "server";
    case surge::v1::TOKEN_COUNTER_SENTENCEPIECE:
      return "sentencepiece";
    case surge::v1::TOKEN_COUNTER_DATASET:
      return "dataset";
    default:
      return "";
  }
}

TokenCounter TokenCounterFromLabel(std::string_view label) {
  for (TokenCounter c :
       {surge::v1::TOKEN_COUNTER_ESTIMATE, surge::v1::TOKEN_COUNTER_SERVER,
        surge::v1::TOKEN_COUNTER_SENTENCEPIECE, surge::v1::TOKEN_COUNTER_DATASET}) {
    if (label == TokenCounterLabel(c)) return c;
  }
  return surge::v1::TOKEN_COUNTER_UNSPECIFIED;
}

double InputLengthSummary::mean_asked() const { return Ratio(asked_sum, compared); }
double InputLengthSummary::mean_reported() const { return Ratio(reported_sum, compared); }
double InputLengthSummary::mean_abs_diff() const { return Ratio(abs_diff_sum, compared); }
bool InputLengthSummary::off_by_more_than_1_percent() const {
  return compared > 0 && asked_sum > 0 &&
         static_cast<double>(abs_diff_sum) > 0.01 * static_cast<double>(asked_sum);
}

void AddInputLength(const surge::v1::RequestRecord& r, InputLengthSummary* s) {
  const bool fitted = r.token_counter() == surge::v1::TOKEN_COUNTER_SERVER ||
                      r.token_counter() == surge::v1::TOKEN_COUNTER_SENTENCEPIECE;
  if (!fitted && r.token_counter() != surge::v1::TOKEN_COUNTER_ESTIMATE) return;
  if (fitted) ++s->fitted;
  s->counter = r.token_counter();
  if (r.status() != surge::v1::OK || r.asked_input_tokens() == 0 || r.input_tokens_estimated()) {
    return;
  }
  const uint64_t asked = r.asked_input_tokens();
  const uint64_t reported = r.input_tokens();
  const uint64_t diff = asked > reported ? asked - reported : reported - asked;
  ++s->compared;
  s->asked_sum += asked;
  s->reported_sum += reported;
  s->abs_diff_sum += diff;
  s->max_abs_diff = std::max(s->max_abs_diff, diff);
  s->mismatches += diff != 0;
}

nlohmann::json InputLengthsToJson(const InputLengthSummary& s) {
  return {{"counter", TokenCounterLabel(s.counter)},
          {"compared", s.compared},
          {"mean_asked", Number(s.mean_asked())},
          {"mean_reported", Number(s.mean_reported())},
          {"mean_abs_diff", Number(s.mean_abs_diff())},
          {"max_abs_diff", s.max_abs_diff},
          {"mismatches", s.mismatches},
          {"rule", kRule}};
}

std::vector<std::pair<std::string, nlohmann::json>> InputLengthRows(const InputLengthSummary& s) {
  return {{"Input Tokens Asked (mean)", Number(s.mean_asked())},
          {"Input Tokens Reported (mean)", Number(s.mean_reported())},
          {"Input Tokens Abs Diff (mean)", Number(s.mean_abs_diff())},
          {"Input Tokens Abs Diff (max)", s.max_abs_diff},
          {"Input Length Mismatches", s.mismatches}};
}

std::string InputLengthLines(const InputLengthSummary& s) {
  std::string out = absl::StrFormat(
      "  %-36s %.2f / %.2f mean over %d requests (--tokenizer %s)\n"
      "  %-36s mean %.2f, max %d, %d mismatching requests\n",
      "Input tokens asked / reported",
      s.mean_asked(), s.mean_reported(), s.compared, TokenCounterLabel(s.counter),
      "Input tokens |asked - reported|", s.mean_abs_diff(), s.max_abs_diff, s.mismatches);
  if (s.fitted > 0 && s.off_by_more_than_1_percent()) {
    absl::StrAppend(&out, absl::StrFormat(
                              "  WARNING: the server counted prompts %.1f %% off the asked "
                              "lengths on average: the tokenizer does not count as the server "
                              "does (for a chat endpoint with a .model: its chat template)\n",
                              100.0 * s.mean_abs_diff() / s.mean_asked()));
  }
  return out;
}

}  // namespace surge::coordinator
