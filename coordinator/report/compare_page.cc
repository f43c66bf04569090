#include "coordinator/report/compare_page.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/atomic_file.h"
#include "common/stats.h"
#include "coordinator/report/plot_pages.h"

namespace surge::coordinator {

namespace {

using Json = nlohmann::json;

constexpr const char* kColorA = "#1f77b4";
constexpr const char* kColorB = "#ff7f0e";

// JSON safe inside a <script> element.
std::string ScriptSafe(const Json& j) {
  std::string out;
  for (char c : j.dump()) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The metric's name for people: "ttft_ms" → "TTFT".
std::string Label(const std::string& metric) {
  std::string name = metric.substr(0, metric.find('_'));
  std::transform(name.begin(), name.end(), name.begin(), ::toupper);
  return name;
}

// The pairs' differences B − A of metric `m` over plan time, every k-th.
Json DiffTrace(const PairedRequests& p, int m, int axis) {
  const size_t n = p.index.size();
  const size_t stride =
      std::max<size_t>(1, (n + kCompareMaxDiffPoints - 1) / kCompareMaxDiffPoints);
  Json x = Json::array(), y = Json::array();
  for (size_t k = 0; k < n; k += stride) {
    const double d = p.b_ms[m][k] - p.a_ms[m][k];
    if (std::isnan(d)) continue;
    x.push_back(p.planned_offset_s[k]);
    y.push_back(d);
  }
  const std::string suffix = axis == 1 ? "" : std::to_string(axis);
  return Json{{"type", "scattergl"},
              {"mode", "markers"},
              {"name", absl::StrCat(Label(kComparedMetrics[m]), " B − A")},
              {"x", std::move(x)},
              {"y", std::move(y)},
              {"xaxis", "x" + suffix},
              {"yaxis", "y" + suffix},
              {"marker", {{"size", 4}, {"opacity", 0.6}}}};
}

// The ECDF of one side's values of metric `m`: evenly spaced quantiles.
Json EcdfTrace(const std::vector<double>& values, int m, int axis, bool side_b) {
  std::vector<double> v;
  for (double x : values) {
    if (!std::isnan(x)) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  Json x = Json::array(), y = Json::array();
  const size_t points = std::min(v.size(), kCompareEcdfPoints);
  for (size_t k = 0; k < points; ++k) {
    const double p = points == 1 ? 100.0 : 100.0 * static_cast<double>(k) / (points - 1);
    x.push_back(PercentileOfSorted(v, p));
    y.push_back(p / 100.0);
  }
  const std::string suffix = axis == 1 ? "" : std::to_string(axis);
  return Json{{"type", "scatter"},
              {"mode", "lines"},
              {"line", {{"shape", "hv"}, {"color", side_b ? kColorB : kColorA}}},
              {"name", absl::StrCat(Label(kComparedMetrics[m]), side_b ? " B" : " A")},
              {"x", std::move(x)},
              {"y", std::move(y)},
              {"xaxis", "x" + suffix},
              {"yaxis", "y" + suffix}};
}

// The layout of three subplots, stacked (rows) or side by side.
Json GridLayout(bool rows, const std::string& title, const std::string& x_title,
                const std::string& y_title) {
  Json layout{
      {"title", {{"text", title}}},
      {"grid", {{"rows", rows ? 3 : 1}, {"columns", rows ? 1 : 3}, {"pattern", "independent"}}},
      {"height", rows ? 900 : 420},
      {"showlegend", true}};
  for (int m = 0; m < kComparedMetricCount; ++m) {
    const std::string suffix = m == 0 ? "" : std::to_string(m + 1);
    const std::string name = Label(kComparedMetrics[m]);
    layout["xaxis" + suffix] = {{"title", {{"text", rows ? x_title : name + " " + x_title}}}};
    layout["yaxis" + suffix] = {{"title", {{"text", rows ? name + " " + y_title : y_title}}}};
  }
  return layout;
}

std::string MetricRows(const Comparison& c) {
  std::string rows;
  for (const PairedMetric& m : c.metrics) {
    absl::StrAppend(
        &rows, "<tr><th>", Label(m.metric), "</th><td>", m.pairs, "</td><td>",
        MsText(m.a_median_ms), " / ", MsText(m.a_p99_ms), "</td><td>", MsText(m.b_median_ms), " / ",
        MsText(m.b_p99_ms), "</td><td>", MsText(m.median_diff_ms), " [", MsText(m.ci_ms.low), ", ",
        MsText(m.ci_ms.high), "]</td><td>",
        std::isnan(m.share_b_faster) ? std::string("n/a")
                                     : absl::StrFormat("%.1f %%", m.share_b_faster * 100),
        "</td><td>", c.has_verdict ? MetricVerdict(m) : std::string("—"), "</td></tr>\n");
  }
  return rows;
}

std::string CertificateRow(const std::string& name, const ComparedRun& r) {
  const RunCertificate& k = r.certificate;
  return absl::StrCat(
      "<tr><th>", name, "</th><td>", HtmlEscape(r.folder.string()), "</td><td>", r.plan_hash,
      "</td><td>", k.valid ? "kept" : "not kept", "</td><td>", MsText(k.lateness_p99_ms), " / ",
      MsText(k.lateness_limit_ms), "</td><td>", absl::StrFormat("%.4f", k.achieved_vs_intended),
      "</td><td>", absl::StrFormat("%.4f / %.4f", k.ks_distance, k.ks_critical), "</td><td>",
      HtmlEscape(k.stop_reason), "</td><td>",
      HtmlEscape(k.reasons.empty() ? std::string("—") : absl::StrJoin(k.reasons, "; ")),
      "</td></tr>\n");
}

std::string Body(const Comparison& c) {
  std::string body = "<h1 style=\"font-size:20px\">Paired comparison: B − A, same plan</h1>\n";
  if (c.has_verdict) {
    absl::StrAppend(&body, "<p id=\"surge-verdict\">Both runs kept their schedule; ",
                    c.pairs.index.size(), " pairs (requests ok in both).</p>\n");
  } else {
    absl::StrAppend(&body, "<p id=\"surge-verdict\" class=\"none\">No verdict: ",
                    HtmlEscape(absl::StrJoin(c.no_verdict_reasons, "; ")), "</p>\n");
  }
  absl::StrAppend(
      &body,
      "<table id=\"surge-compare-table\"><thead><tr><th>Metric</th><th>Pairs</th>"
      "<th>A median / p99 (ms)</th><th>B median / p99 (ms)</th>"
      "<th>Median of B − A (ms) [95 % CI]</th><th>B faster</th><th>Verdict</th></tr></thead>"
      "<tbody>\n",
      MetricRows(c), "</tbody></table>\n<p>Interval: percentile bootstrap of the median, ",
      c.settings.bootstrap.resamples, " resamples of the pairs, seed ", c.settings.bootstrap.seed,
      ".</p>\n<h2>Certificates</h2>\n<table id=\"surge-certificates\"><thead><tr><th>Run</th>"
      "<th>Folder</th><th>Plan hash</th><th>Schedule</th><th>Lateness p99 / limit (ms)</th>"
      "<th>Achieved / intended</th><th>KS / critical</th><th>Stop reason</th><th>Reasons</th>"
      "</tr></thead><tbody>\n",
      CertificateRow("A", c.a), CertificateRow("B", c.b), "</tbody></table>\n",
      "<h2>Paired differences over plan time</h2>\n"
      "<div id=\"surge-compare-diff\" style=\"width:100%;min-width:900px;height:900px\"></div>\n"
      "<h2>Distributions</h2>\n"
      "<div id=\"surge-compare-dist\" style=\"width:100%;min-width:900px;height:420px\"></div>\n");
  return body;
}

constexpr char kStyle[] =
    "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:16px;"
    "color:#222}h2{font-size:18px;margin:24px 0 8px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #cfcfcf;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}#surge-verdict{font-size:15px;font-weight:bold}"
    "#surge-verdict.none{color:#a33}";

}  // namespace

Json CompareFigures(const Comparison& c) {
  Json diff = Json::array(), dist = Json::array();
  for (int m = 0; m < kComparedMetricCount; ++m) {
    diff.push_back(DiffTrace(c.pairs, m, m + 1));
    dist.push_back(EcdfTrace(c.pairs.a_ms[m], m, m + 1, false));
    dist.push_back(EcdfTrace(c.pairs.b_ms[m], m, m + 1, true));
  }
  return Json{
      {"diff",
       {{"data", std::move(diff)},
        {"layout", GridLayout(true, "B − A per request over plan time", "planned offset (s)",
                              "B − A (ms)")}}},
      {"dist",
       {{"data", std::move(dist)},
        {"layout", GridLayout(false, "Distributions of A and B (ECDF)", "(ms)", "share")}}}};
}

absl::Status WriteComparePage(const Comparison& c, const std::filesystem::path& html_path) {
  const std::string head =
      absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
                   "<title>surge compare</title>\n<style>", kStyle,
                   "</style>\n<script>/* plotly.js, embedded by surge (MIT license) */\n");
  const std::string body = absl::StrCat(
      "\n</script>\n</head>\n<body>\n", Body(c),
      "<script>\nconst surgeCompare = ", ScriptSafe(CompareFigures(c)),
      ";\nconst surgeConfig = {displaylogo: false, responsive: true};\n"
      "Plotly.newPlot('surge-compare-diff', surgeCompare.diff.data, surgeCompare.diff.layout, "
      "surgeConfig);\n"
      "Plotly.newPlot('surge-compare-dist', surgeCompare.dist.data, surgeCompare.dist.layout, "
      "surgeConfig);\n</script>\n</body>\n</html>\n");
  return WriteFileAtomically(html_path, {head, EmbeddedPlotlyJs(), body});
}

}  // namespace surge::coordinator
