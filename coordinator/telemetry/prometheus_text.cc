#include "coordinator/telemetry/prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace surge::coordinator {
namespace {

bool NameChar(char c, bool first) {
  return absl::ascii_isalpha(c) || c == '_' || c == ':' || (!first && absl::ascii_isdigit(c));
}

// Reads a metric or label name at the front of `s`; empty when none.
absl::string_view TakeName(absl::string_view& s) {
  size_t n = 0;
  while (n < s.size() && NameChar(s[n], n == 0)) ++n;
  absl::string_view name = s.substr(0, n);
  s.remove_prefix(n);
  return name;
}

// Reads `"..."` at the front of `s` into `out`, unescaping \\, \" and \n.
bool TakeQuoted(absl::string_view& s, std::string& out) {
  if (s.empty() || s[0] != '"') return false;
  for (size_t i = 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      s.remove_prefix(i + 1);
      return true;
    }
    if (c == '\\' && i + 1 < s.size()) {
      const char e = s[++i];
      out += e == 'n' ? '\n' : e;
    } else {
      out += c;
    }
  }
  return false;
}

// Reads `{name="value",...}` (a trailing comma allowed).
bool TakeLabels(absl::string_view& s, std::map<std::string, std::string>& labels) {
  if (!absl::ConsumePrefix(&s, "{")) return true;  // no labels
  while (true) {
    s = absl::StripLeadingAsciiWhitespace(s);
    if (absl::ConsumePrefix(&s, "}")) return true;
    const absl::string_view name = TakeName(s);
    if (name.empty()) return false;
    s = absl::StripLeadingAsciiWhitespace(s);
    if (!absl::ConsumePrefix(&s, "=")) return false;
    s = absl::StripLeadingAsciiWhitespace(s);
    std::string value;
    if (!TakeQuoted(s, value)) return false;
    labels[std::string(name)] = std::move(value);
    s = absl::StripLeadingAsciiWhitespace(s);
    if (!absl::ConsumePrefix(&s, ",") && !(!s.empty() && s[0] == '}')) return false;
  }
}

bool ParseValue(absl::string_view v, double& out) {
  if (v == "+Inf" || v == "Inf") {
    out = std::numeric_limits<double>::infinity();
  } else if (v == "-Inf") {
    out = -std::numeric_limits<double>::infinity();
  } else if (v == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
  } else {
    return absl::SimpleAtod(v, &out);
  }
  return true;
}

// A sample line; false when it is not a valid one.
bool ParseSample(absl::string_view line, PrometheusSample& sample) {
  const absl::string_view name = TakeName(line);
  if (name.empty()) return false;
  sample.name = std::string(name);
  if (!TakeLabels(line, sample.labels)) return false;
  const std::vector<absl::string_view> rest =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (rest.empty() || rest.size() > 2) return false;
  if (rest.size() == 2) {  // an optional timestamp, ms
    int64_t ts = 0;
    if (!absl::SimpleAtoi(rest[1], &ts)) return false;
  }
  return ParseValue(rest[0], sample.value);
}

// `# TYPE name kind` records the kind; other comments are ignored.
void ParseComment(absl::string_view line, PrometheusText& text) {
  const std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.size() >= 4 && words[0] == "#" && words[1] == "TYPE") {
    text.types[std::string(words[2])] = std::string(words[3]);
  }
}

}  // namespace

PrometheusText ParsePrometheusText(std::string_view text_in) {
  const absl::string_view text(text_in.data(), text_in.size());
  PrometheusText out;
  int64_t number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (line[0] == '#') {
      ParseComment(line, out);
      continue;
    }
    PrometheusSample sample;
    if (ParseSample(line, sample)) {
      out.samples.push_back(std::move(sample));
    } else {
      if (out.bad_lines == 0) out.first_bad_line = number;
      ++out.bad_lines;
    }
  }
  return out;
}

std::optional<double> SumOf(const PrometheusText& text, std::string_view name) {
  std::optional<double> sum;
  for (const PrometheusSample& s : text.samples) {
    if (s.name == name) sum = sum.value_or(0) + s.value;
  }
  return sum;
}

}  // namespace surge::coordinator
