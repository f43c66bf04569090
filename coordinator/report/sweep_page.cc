#include "coordinator/report/sweep_page.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/atomic_file.h"
#include "coordinator/report/plot_pages.h"

namespace surge::coordinator {
namespace {

using nlohmann::json;

// The points a chart draws: those that ran to an end (ok, saturated,
// invalid); interrupted and failed ones are only in the table.
std::vector<const json*> DrawnPoints(const json& sweep) {
  std::vector<const json*> out;
  if (!sweep.contains("points")) return out;
  for (const json& p : sweep["points"]) {
    const std::string status = p.value("status", "");
    if (status == "ok" || status == "saturated" || status == "invalid") out.push_back(&p);
  }
  return out;
}

// Certified points are filled circles, saturated ones diamonds, invalid
// ones hollow circles.
std::string Symbol(const json& p) {
  const std::string status = p.value("status", "");
  if (status == "invalid") return "circle-open";
  if (status == "saturated") return "diamond";
  return "circle";
}

std::string Hover(const json& p) {
  std::string text = absl::StrCat("point ", p.value("number", 0), ": ", p.value("status", ""));
  const std::string note = p.value("note", "");
  if (!note.empty()) absl::StrAppend(&text, "<br>", HtmlEscape(note));
  return text;
}

json Metric(const json& p, const char* key) {
  if (!p.contains("metrics") || !p["metrics"].contains(key)) return nullptr;
  return p["metrics"][key];
}

// One trace of `key` over the drawn points.
json Trace(const std::vector<const json*>& points, const char* key, std::string_view name,
           std::string_view color, bool dashed, std::string_view yaxis = "y") {
  json x = json::array(), y = json::array(), symbols = json::array(), hover = json::array();
  for (const json* p : points) {
    x.push_back((*p)["rate_rps"]);
    y.push_back(Metric(*p, key));
    symbols.push_back(Symbol(*p));
    hover.push_back(Hover(*p));
  }
  return {{"type", "scatter"},
          {"mode", "lines+markers"},
          {"name", name},
          {"x", x},
          {"y", y},
          {"yaxis", yaxis},
          {"text", hover},
          {"hovertemplate", "%{x} RPS: %{y}<br>%{text}<extra>" + std::string(name) + "</extra>"},
          {"line", {{"color", color}, {"dash", dashed ? "dot" : "solid"}}},
          {"marker", {{"symbol", symbols}, {"size", 10}, {"color", color}}}};
}

// The answer, as a vertical line on a chart over rates.
void AddAnswer(const json& sweep, json& layout) {
  if (!sweep.contains("max_rate_rps") || !sweep["max_rate_rps"].is_number()) return;
  const double r = sweep["max_rate_rps"].get<double>();
  layout["shapes"] = json::array({{{"type", "line"},
                                   {"x0", r},
                                   {"x1", r},
                                   {"yref", "paper"},
                                   {"y0", 0},
                                   {"y1", 1},
                                   {"line", {{"color", "#2a7"}, {"dash", "dash"}, {"width", 2}}}}});
  layout["annotations"] = json::array({{{"x", r},
                                        {"yref", "paper"},
                                        {"y", 1.02},
                                        {"text", absl::StrFormat("max rate within SLO %.4g", r)},
                                        {"showarrow", false},
                                        {"font", {{"color", "#2a7"}}}}});
}

json Layout(std::string_view title, std::string_view ytitle, bool log_y) {
  json layout = {{"title", {{"text", title}}},
                 {"xaxis", {{"title", {{"text", "Offered rate (RPS, the point's target rate)"}}}}},
                 {"yaxis", {{"title", {{"text", ytitle}}}}},
                 {"legend", {{"orientation", "h"}, {"y", -0.2}}},
                 {"margin", {{"t", 60}}}};
  if (log_y) {
    layout["yaxis"]["type"] = "log";
    layout["yaxis"]["dtick"] = 1;  // a label at each power of ten
    layout["yaxis"]["tickformat"] = "~g";
  }
  return layout;
}

json LatencyFigure(const json& sweep, const std::vector<const json*>& points) {
  json data = json::array({Trace(points, "ttft_p50_ms", "TTFT p50", "#1f77b4", false),
                           Trace(points, "ttft_p99_ms", "TTFT p99", "#1f77b4", true),
                           Trace(points, "tpot_p50_ms", "TPOT p50", "#ff7f0e", false),
                           Trace(points, "tpot_p99_ms", "TPOT p99", "#ff7f0e", true),
                           Trace(points, "e2el_p50_ms", "E2EL p50", "#9467bd", false),
                           Trace(points, "e2el_p99_ms", "E2EL p99", "#9467bd", true)});
  json layout = Layout("Latency against offered rate", "ms (log)", true);
  AddAnswer(sweep, layout);
  return {{"data", data}, {"layout", layout}};
}

json ThroughputFigure(const json& sweep, const std::vector<const json*>& points) {
  json data = json::array(
      {Trace(points, "request_throughput_rps", "Request throughput", "#2ca02c", false)});
  if (sweep.contains("objective") && sweep["objective"].value("has_goodput", false)) {
    data.push_back(Trace(points, "goodput_rps", "Goodput", "#d62728", false));
  }
  json x = json::array();
  for (const json* p : points) x.push_back((*p)["rate_rps"]);
  data.push_back({{"type", "scatter"},
                  {"mode", "lines"},
                  {"name", "Offered (y = x)"},
                  {"x", x},
                  {"y", x},
                  {"line", {{"color", "#999"}, {"dash", "dash"}}}});
  json layout = Layout("Throughput and goodput against offered rate", "requests/s", false);
  AddAnswer(sweep, layout);
  return {{"data", data}, {"layout", layout}};
}

// Achieved / intended (left) and send lateness p99 against its limit
// (right): the certificate's two numbers per point.
json CertificateFigure(const std::vector<const json*>& points) {
  json x = json::array(), ratio = json::array(), late = json::array(), limit = json::array();
  json symbols = json::array(), hover = json::array();
  for (const json* p : points) {
    const json& c = (*p)["certificate"];
    x.push_back((*p)["rate_rps"]);
    ratio.push_back(c.value("achieved_vs_intended", json(nullptr)));
    late.push_back(c.value("lateness_p99_ms", json(nullptr)));
    limit.push_back(c.value("lateness_limit_ms", json(nullptr)));
    symbols.push_back(Symbol(*p));
    hover.push_back(Hover(*p));
  }
  json data = json::array({{{"type", "scatter"},
                            {"mode", "lines+markers"},
                            {"name", "Achieved / intended rate"},
                            {"x", x},
                            {"y", ratio},
                            {"text", hover},
                            {"marker", {{"symbol", symbols}, {"size", 10}, {"color", "#1f77b4"}}}},
                           {{"type", "scatter"},
                            {"mode", "lines+markers"},
                            {"name", "Send lateness p99 (ms)"},
                            {"x", x},
                            {"y", late},
                            {"yaxis", "y2"},
                            {"text", hover},
                            {"marker", {{"symbol", symbols}, {"size", 10}, {"color", "#ff7f0e"}}}},
                           {{"type", "scatter"},
                            {"mode", "lines"},
                            {"name", "Lateness limit (ms)"},
                            {"x", x},
                            {"y", limit},
                            {"yaxis", "y2"},
                            {"line", {{"color", "#ff7f0e"}, {"dash", "dash"}}}}});
  json layout =
      Layout("Certificate: did surge keep each point's schedule?", "achieved / intended", false);
  // From 0.95 (or lower, to show a point that fell short) to just above 1:
  // a kept schedule is a flat line at 1, not noise blown up by autoscale.
  double lowest = 0.95;
  for (const json& r : ratio) {
    if (r.is_number()) lowest = std::min(lowest, r.get<double>() - 0.02);
  }
  layout["yaxis"]["range"] = json::array({lowest, 1.01});
  layout["yaxis2"] = {{"title", {{"text", "ms (log)"}}},
                      {"overlaying", "y"},
                      {"side", "right"},
                      {"type", "log"},
                      {"dtick", 1},
                      {"tickformat", "~g"}};
  return {{"data", data}, {"layout", layout}};
}

std::optional<json> WaitingFigure(const std::vector<const json*>& points) {
  json x = json::array(), y = json::array();
  bool any = false;
  for (const json* p : points) {
    x.push_back((*p)["rate_rps"]);
    const json w = Metric(*p, "peak_waiting");
    any = any || w.is_number();
    y.push_back(w);
  }
  if (!any) return std::nullopt;
  json data = json::array({{{"type", "bar"},
                            {"name", "Peak waiting requests (server)"},
                            {"x", x},
                            {"y", y},
                            {"marker", {{"color", "#8c564b"}}}}});
  return json{{"data", data},
              {"layout", Layout("Server's peak waiting queue per point (--server-metrics)",
                                "requests waiting", false)}};
}

std::string Cell(const json& v, const char* fmt = "%.4g") {
  if (v.is_number()) return absl::StrFormat(fmt, v.get<double>());
  if (v.is_string()) return HtmlEscape(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return "–";
}

std::string PointsTable(const json& sweep) {
  std::string t =
      "<table id=\"sweep-points\"><thead><tr><th>#</th><th>Rate (RPS)</th><th>Status</th>"
      "<th>Requests</th><th>TTFT p50 / p99 (ms)</th><th>TPOT p99 (ms)</th><th>E2EL p99 (ms)</th>"
      "<th>Throughput (RPS)</th><th>Goodput</th><th>Peak waiting</th><th>Achieved / "
      "intended</th><th>Lateness p99 / limit (ms)</th><th>KS D (critical)</th><th>Clock ± "
      "(ms)</th><th>Why</th><th>Run folder</th></tr></thead><tbody>\n";
  if (!sweep.contains("points")) return t + "</tbody></table>\n";
  for (const json& p : sweep["points"]) {
    const json& m = p.contains("metrics") ? p["metrics"] : json::object();
    const json& c = p.contains("certificate") ? p["certificate"] : json::object();
    auto get = [](const json& o, const char* k) { return o.contains(k) ? o[k] : json(nullptr); };
    const json fraction = get(m, "goodput_fraction");
    const std::string folder = p.value("folder", "");
    absl::StrAppend(
        &t, "<tr class=\"sweep-", HtmlEscape(p.value("status", "")), "\"><td>",
        p.value("number", 0), "</td><td>", Cell(get(p, "rate_rps")), "</td><td>",
        Cell(get(p, "status")), "</td><td>", Cell(get(p, "requests"), "%.0f"), "</td><td>",
        Cell(get(m, "ttft_p50_ms")), " / ", Cell(get(m, "ttft_p99_ms")), "</td><td>",
        Cell(get(m, "tpot_p99_ms")), "</td><td>", Cell(get(m, "e2el_p99_ms")), "</td><td>",
        Cell(get(m, "request_throughput_rps")), "</td><td>",
        fraction.is_number() ? absl::StrFormat("%.1f %%", fraction.get<double>() * 100) : "–",
        "</td><td>", Cell(get(m, "peak_waiting"), "%.0f"), "</td><td>",
        Cell(get(c, "achieved_vs_intended")), "</td><td>", Cell(get(c, "lateness_p99_ms")), " / ",
        Cell(get(c, "lateness_limit_ms")), "</td><td>", Cell(get(c, "ks_distance")), " (",
        Cell(get(c, "ks_critical")), ")</td><td>", Cell(get(c, "clock_uncertainty_ms")),
        "</td><td>", Cell(get(p, "note")), "</td><td><a href=\"", HtmlEscape(folder), "\">",
        HtmlEscape(folder), "</a></td></tr>\n");
  }
  return t + "</tbody></table>\n";
}

constexpr char kStyle[] =
    "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:16px;"
    "color:#222}h2{font-size:18px;margin:24px 0 8px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #cfcfcf;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}#sweep-answer{font-size:16px;font-weight:bold;color:#1a6}"
    ".sweep-invalid td{color:#a33}.plot{width:100%;min-width:900px;height:460px}"
    "#sweep-points td:nth-child(15){min-width:320px}";

}  // namespace

json SweepFigures(const json& sweep) {
  const std::vector<const json*> points = DrawnPoints(sweep);
  json figures = {{"latency", LatencyFigure(sweep, points)},
                  {"throughput", ThroughputFigure(sweep, points)},
                  {"certificate", CertificateFigure(points)}};
  if (std::optional<json> waiting = WaitingFigure(points)) figures["waiting"] = *waiting;
  return figures;
}

absl::Status WriteSweepPage(const json& sweep, const std::filesystem::path& html_path) {
  const json figures = SweepFigures(sweep);
  std::string answer = "No objective (--goodput): no capacity answer; the charts show each point.";
  if (sweep.contains("answer")) answer = sweep["answer"].value("text", answer);
  const std::string head = absl::StrCat(
      "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>surge sweep</title>\n"
      "<style>",
      kStyle, "</style>\n<script>\n");
  std::string body = absl::StrCat(
      "\n</script>\n</head>\n<body>\n<h2>Sweep: ", sweep.value("started_at_utc", ""),
      "</h2>\n<p id=\"sweep-answer\">", HtmlEscape(answer),
      "</p>\n<p>Filled circles: points surge kept (their certificate holds). Hollow circles: "
      "points where surge was the limit (never used in an answer). Diamonds: points the server "
      "saturated (ended early).</p>\n");
  // The charts in reading order: what was measured, then whether it counts.
  json order = json::array();
  for (const char* key : {"latency", "throughput", "waiting", "certificate"}) {
    if (!figures.contains(key)) continue;
    order.push_back(key);
    absl::StrAppend(&body, "<div id=\"sweep-", key, "\" class=\"plot\"></div>\n");
  }
  absl::StrAppend(&body, "<h2>Points</h2>\n", PointsTable(sweep),
                  "<script>\nconst surgeSweep = ", figures.dump(), ";\n", "for (const key of ",
                  order.dump(), ") {\n",
                  "  Plotly.newPlot('sweep-' + key, surgeSweep[key].data, surgeSweep[key].layout,\n"
                  "                 {displaylogo: false, responsive: true});\n}\n"
                  "</script>\n</body>\n</html>\n");
  return WriteFileAtomically(html_path, {head, EmbeddedPlotlyJs(), body});
}

}  // namespace surge::coordinator
