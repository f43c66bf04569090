#include "coordinator/report/plot_pages.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/atomic_file.h"
#include "nlohmann/json.hpp"

// plotly.min.js, embedded by plotly_embed.S.
extern "C" const char surge_plotly_js_begin[];
extern "C" const char surge_plotly_js_end[];

namespace surge::coordinator {
namespace {

using Json = nlohmann::ordered_json;

// Page geometry, pixels.
constexpr int kChartHeightPx = 430;
constexpr int kChartGapPx = 120;
constexpr int kTopMarginPx = 110;
constexpr int kBottomMarginPx = 70;
constexpr int kLeftMarginPx = 80;
constexpr int kRightMarginPx = 330;  // room for the legends beside the charts

// Significant digits written for x (times, up to ~1e6 s) and y values.
constexpr int kXDigits = 10;
constexpr int kYDigits = 7;

void AppendNumber(std::string& out, double v, int digits) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[48];
  std::to_chars_result res;
  if (v == std::trunc(v) && std::fabs(v) < 1e15) {
    res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);  // exact integer
  } else {
    res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, digits);
  }
  out.append(buf, res.ptr);
}

void AppendArray(std::string& out, const std::vector<double>& values, int digits) {
  out.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendNumber(out, values[i], digits);
  }
  out.push_back(']');
}

// Dumps JSON so that it can sit inside a <script> element: '<' only occurs
// inside strings, where \u003c means the same.
std::string DumpScriptSafe(const Json& j) {
  const std::string raw = j.dump();
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string AxisRef(const char* prefix, size_t chart) {
  return chart == 0 ? std::string(prefix) : absl::StrCat(prefix, chart + 1);
}
std::string LegendRef(size_t chart) { return AxisRef("legend", chart); }
// A chart's secondary y axis: numbered from 101 so that it never meets a
// chart's own axis.
std::string SecondaryAxisRef(const char* prefix, size_t chart) {
  return absl::StrCat(prefix, 101 + chart);
}

struct Geometry {
  int height_px;
  // Per chart, paper fraction of its top and bottom edge.
  std::vector<std::pair<double, double>> domains;
};

Geometry Layout(size_t charts) {
  Geometry g;
  const int n = static_cast<int>(std::max<size_t>(charts, 1));
  const int paper = n * kChartHeightPx + (n - 1) * kChartGapPx;
  g.height_px = paper + kTopMarginPx + kBottomMarginPx;
  for (int k = 0; k < n; ++k) {
    const double top = 1.0 - static_cast<double>(k * (kChartHeightPx + kChartGapPx)) / paper;
    const double bottom = top - static_cast<double>(kChartHeightPx) / paper;
    g.domains.emplace_back(std::min(1.0, top), std::max(0.0, bottom));
  }
  return g;
}

std::string TraceJson(const FigureTrace& tr) {
  Json j;
  j["type"] = tr.kind == TraceKind::kBars ? "bar" : "scatter";
  j["name"] = tr.name;
  j["legend"] = LegendRef(tr.chart);
  j["showlegend"] = true;
  j["xaxis"] = AxisRef("x", tr.chart);
  j["yaxis"] = tr.secondary_y ? SecondaryAxisRef("y", tr.chart) : AxisRef("y", tr.chart);
  switch (tr.kind) {
    case TraceKind::kLine: {
      // A line through one point draws nothing: show the point.
      j["mode"] = tr.points.size() == 1 ? "lines+markers" : "lines";
      Json line = {{"color", tr.color}, {"width", tr.line_width}, {"dash", tr.dash}};
      if (!tr.line_shape.empty()) line["shape"] = tr.line_shape;
      j["line"] = std::move(line);
      break;
    }
    case TraceKind::kMarkers:
      j["mode"] = "markers";
      j["marker"] = {{"color", tr.color},
                     {"symbol", tr.symbol},
                     {"size", tr.marker_size},
                     {"line", {{"color", "#333333"}, {"width", 0.5}}}};
      break;
    case TraceKind::kBars:
      j["marker"] = {{"color", tr.color}, {"opacity", 0.8}};
      break;
  }
  if (!tr.hover.empty()) j["hovertemplate"] = tr.hover;
  std::string out = DumpScriptSafe(j);
  out.pop_back();  // reopen the object for the point arrays
  out.reserve(out.size() + tr.points.size() * 20 + 16);
  out += ",\"x\":";
  AppendArray(out, tr.points.x, kXDigits);
  out += ",\"y\":";
  AppendArray(out, tr.points.y, kYDigits);
  if (tr.kind == TraceKind::kBars) {
    out += ",\"width\":";
    AppendArray(out, tr.bar_widths, kYDigits);
  }
  out += "}";
  return out;
}

// One shaded band: a rect under the traces over the chart's height, and
// its label at the top left of the band.
void AppendBand(const ShadedBand& b, const std::string& x, const std::string& y, Json& shapes,
                Json& annotations) {
  const std::string y_domain = absl::StrCat(y, " domain");
  shapes.push_back({{"type", "rect"},
                    {"xref", x},
                    {"yref", y_domain},
                    {"x0", b.x0_s},
                    {"x1", b.x1_s},
                    {"y0", 0},
                    {"y1", 1},
                    {"fillcolor", b.color},
                    {"layer", "below"},
                    {"line", {{"width", 0}}}});
  Json label = {
      {"text", b.label},       {"x", b.x0_s},       {"xref", x},           {"y", 1},
      {"yref", y_domain},      {"xanchor", "left"}, {"yanchor", "bottom"}, {"showarrow", false},
      {"font", {{"size", 10}}}};
  if (!b.hover.empty()) label["hovertext"] = b.hover;
  annotations.push_back(std::move(label));
}

Json LayoutJson(const RpsFigure& fig) {
  const Geometry g = Layout(fig.charts.size());
  Json layout;
  layout["title"] = {
      {"text", fig.title}, {"x", 0.5}, {"xanchor", "center"}, {"font", {{"size", 18}}}};
  layout["height"] = g.height_px;
  layout["showlegend"] = true;  // a legend with one trace is hidden otherwise
  layout["hovermode"] = "closest";
  layout["bargap"] = 0.03;
  layout["margin"] = {
      {"t", kTopMarginPx}, {"b", kBottomMarginPx}, {"l", kLeftMarginPx}, {"r", kRightMarginPx}};
  Json annotations = Json::array();
  Json shapes = Json::array();
  Json menus = Json::array();
  for (size_t k = 0; k < fig.charts.size(); ++k) {
    const FigureChart& c = fig.charts[k];
    const auto [top, bottom] = g.domains[k];
    const std::string x = AxisRef("x", k);
    const std::string y = AxisRef("y", k);
    layout[AxisRef("xaxis", k)] = {{"anchor", y},
                                   {"domain", {0, 1}},
                                   {"title", {{"text", c.x_title}}},
                                   {"type", c.x_log ? "log" : "linear"},
                                   {"zeroline", false}};
    layout[AxisRef("yaxis", k)] = {{"anchor", x},
                                   {"domain", {bottom, top}},
                                   {"title", {{"text", c.y_title}}},
                                   {"type", c.y_log ? "log" : "linear"}};
    if (!c.y2_title.empty()) {
      layout[SecondaryAxisRef("yaxis", k)] = {{"anchor", x},
                                              {"overlaying", y},
                                              {"side", "right"},
                                              {"title", {{"text", c.y2_title}}},
                                              {"rangemode", "tozero"},
                                              {"showgrid", false},
                                              // Its own ticks, not the left axis's grid lines.
                                              {"tickmode", "auto"}};
    }
    // Beside a secondary axis the legend leaves room for its tick labels.
    layout[LegendRef(k)] = {{"x", c.y2_title.empty() ? 1.02 : 1.09},
                            {"xanchor", "left"},
                            {"y", top},
                            {"yanchor", "top"},
                            {"yref", "paper"},
                            {"title", {{"text", absl::StrCat("<b>", c.legend_title, "</b>")}}},
                            {"bgcolor", "rgba(255,255,255,0.9)"},
                            {"bordercolor", "#cccccc"},
                            {"borderwidth", 1}};
    annotations.push_back({{"text", absl::StrCat("<b>", c.title, "</b>")},
                           {"x", 0.5},
                           {"xref", "paper"},
                           {"xanchor", "center"},
                           {"y", top},
                           {"yref", "paper"},
                           {"yanchor", "bottom"},
                           {"yshift", 6},
                           {"showarrow", false},
                           {"font", {{"size", 15}}}});
    for (const ShadedBand& b : c.bands) AppendBand(b, x, y, shapes, annotations);
    for (const VerticalMarker& m : c.markers) {
      shapes.push_back({{"type", "line"},
                        {"xref", x},
                        {"yref", absl::StrCat(y, " domain")},
                        {"x0", m.x},
                        {"x1", m.x},
                        {"y0", 0},
                        {"y1", 1},
                        {"line", {{"color", m.color}, {"width", 1}, {"dash", "dot"}}}});
      Json label = {{"text", m.label},
                    {"x", m.x},
                    {"xref", x},
                    {"y", 1},
                    {"yref", absl::StrCat(y, " domain")},
                    {"xanchor", "left"},
                    {"yanchor", "top"},
                    {"textangle", -90},
                    {"showarrow", false},
                    {"font", {{"size", 10}, {"color", m.color}}},
                    // Readable over dense markers.
                    {"bgcolor", "rgba(255,255,255,0.8)"}};
      if (!m.hover.empty()) label["hovertext"] = m.hover;
      annotations.push_back(std::move(label));
    }
    if (c.y_log_toggle) {
      const std::string key = absl::StrCat(AxisRef("yaxis", k), ".type");
      menus.push_back(
          {{"type", "buttons"},
           {"direction", "right"},
           {"showactive", true},
           {"active", c.y_log ? 1 : 0},
           {"x", 0},
           {"xanchor", "left"},
           {"y", top},
           {"yanchor", "bottom"},
           {"pad", {{"b", 4}}},
           {"font", {{"size", 11}}},
           {"buttons",
            {{{"label", "Linear y"}, {"method", "relayout"}, {"args", {{{key, "linear"}}}}},
             {{"label", "Log y"}, {"method", "relayout"}, {"args", {{{key, "log"}}}}}}}});
    }
  }
  layout["annotations"] = std::move(annotations);
  layout["shapes"] = std::move(shapes);
  layout["updatemenus"] = std::move(menus);
  return layout;
}

Json LegendTableJson(const RpsFigure& fig) {
  Json rows = Json::array();
  for (const FigureTrace& tr : fig.traces) {
    rows.push_back({{"chart", tr.chart},
                    {"group", tr.row.group},
                    {"legend_item", tr.row.item},
                    {"meaning", tr.row.meaning},
                    {"computation", tr.row.computation},
                    {"criterion", tr.row.criterion},
                    {"visual_appearance", tr.row.appearance},
                    {"full_count", tr.full_count},
                    {"drawn_count", tr.points.size()}});
  }
  return rows;
}

// The run context as a JSON object, label → value, in display order.
Json ContextJson(const RpsFigure& fig) {
  Json c = Json::object();
  for (const ContextItem& item : fig.context) c[item.label] = item.value;
  return c;
}

Json StatsJson(const RpsFigure& fig) {
  Json s;
  s["title"] = fig.title;
  if (!fig.note.empty()) s["note"] = fig.note;
  if (!fig.events.empty()) {
    Json events = Json::array();
    for (const RunEvent& e : fig.events) {
      events.push_back({{"at_s", e.at_s}, {"label", e.label}, {"text", e.text}});
    }
    s["events"] = std::move(events);
  }
  if (!fig.latency.empty()) {
    auto view = [](const LatencyPercentiles& p) {
      return Json{{"p50_s", p.p50_s}, {"p90_s", p.p90_s}, {"p99_s", p.p99_s}};
    };
    Json latency = Json::array();
    for (const LatencyView& v : fig.latency) {
      latency.push_back({{"metric", v.metric},
                         {"count", v.count},
                         {"from_actual_send", view(v.from_actual_send)},
                         {"from_planned_send", view(v.from_planned_send)}});
    }
    s["latency"] = std::move(latency);
  }
  s["instant"] = fig.instant;
  s["requests"] = fig.expected.requests;
  if (!fig.instant) {
    s["normal"] = fig.expected.normal;
    s["timing_anomalies"] = fig.expected.timing;
    s["burstiness_anomalies"] = fig.expected.burstiness;
    s["ewma_window"] = fig.expected.ewma_window;
    s["timing_anomalies_infinite_rps"] = fig.expected.infinite_rps;
  }
  if (fig.actual) {
    const ActualStats& a = *fig.actual;
    // nlohmann writes NaN as null.
    s["actual"] = {{"sent", a.sent},
                   {"plan_normal_candidates", a.plan_normal},
                   {"zero_differences", a.zero_differences},
                   {"negative_differences", a.negative_differences},
                   {"all_zero_differences", a.all_zero_differences},
                   {"all_negative_differences", a.all_negative_differences},
                   {"actual_points", a.actual_points},
                   {"drawn_points", a.drawn_points},
                   {"lateness_p50_s", a.lateness_p50_s},
                   {"lateness_p90_s", a.lateness_p90_s},
                   {"lateness_p99_s", a.lateness_p99_s},
                   {"lateness_max_s", a.lateness_max_s},
                   {"ks_distance", a.ks_distance},
                   {"achieved_rate_rps", a.achieved_rate_rps},
                   {"intended_rate_rps", a.intended_rate_rps},
                   {"rate_bin_width_s", a.rate_bin_width_s}};
  }
  return s;
}

std::string Num(double v, const char* fmt = "%.6g") {
  return std::isnan(v) ? std::string("n/a") : absl::StrFormat(fmt, v);
}
std::string Ms(double s) { return std::isnan(s) ? std::string("n/a") : Num(s * 1e3) + " ms"; }

// Label/value rows of the summary table.
std::vector<std::pair<std::string, std::string>> SummaryRows(const RpsFigure& fig) {
  std::vector<std::pair<std::string, std::string>> rows;
  const ExpectedStats& e = fig.expected;
  rows.emplace_back("Planned requests", absl::StrCat(e.requests));
  if (!fig.instant) {
    rows.emplace_back("Normal requests", absl::StrCat(e.normal));
    rows.emplace_back("Time interval anomalies (Δ < 1 ms)", absl::StrCat(e.timing));
    rows.emplace_back("Burstiness anomalies", absl::StrCat(e.burstiness));
    rows.emplace_back("EWMA window W", absl::StrCat(e.ewma_window));
  }
  if (fig.actual) {
    const ActualStats& a = *fig.actual;
    rows.emplace_back("Sent requests", absl::StrCat(a.sent));
    rows.emplace_back("Actual RPS points (drawn / full)",
                      absl::StrCat(a.drawn_points, " / ", a.actual_points));
    rows.emplace_back("Zero differences not drawn (plan-normal / all)",
                      absl::StrCat(a.zero_differences, " / ", a.all_zero_differences));
    if (!fig.instant) {
      rows.emplace_back("Negative differences not drawn (plan-normal / all)",
                        absl::StrCat(a.negative_differences, " / ", a.all_negative_differences));
      rows.emplace_back("Achieved rate, (n − 1)/(last − first send) over the sent requests (req/s)",
                        Num(a.achieved_rate_rps));
      rows.emplace_back("Intended rate, (N − 1)/(t_{N−1} − t_0) over the whole plan (req/s)",
                        Num(a.intended_rate_rps));
      rows.emplace_back("Send lateness p50 / p90 / p99 / max",
                        absl::StrCat(Ms(a.lateness_p50_s), " / ", Ms(a.lateness_p90_s), " / ",
                                     Ms(a.lateness_p99_s), " / ", Ms(a.lateness_max_s)));
      rows.emplace_back("KS distance, achieved vs planned inter-send intervals",
                        Num(a.ks_distance, "%.4f"));
    }
  }
  return rows;
}

constexpr char kStyle[] =
    "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:16px;"
    "color:#222}"
    "h2{font-size:18px;margin:24px 0 8px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #cfcfcf;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}"
    "#surge-note{font-size:15px;font-weight:bold;color:#a33;margin:0 0 8px}"
    "#surge-events{font-size:14px;color:#b22222;margin:0 0 8px}#surge-events ul{margin:2px 0}"
    "#surge-context{margin-bottom:8px}#surge-context th{font-weight:600}"
    "#surge-latency{margin-bottom:8px}#surge-latency th{font-weight:600}"
    "#legend-explanation td:nth-child(4),#legend-explanation td:nth-child(5){max-width:380px}";

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string ExpectedPlotFileName(const std::string& dataset) {
  return dataset + "_rps_distribution_plot.html";
}

std::string ActualPlotFileName(const std::string& dataset) {
  return dataset + "_rps_distribution_plot_with_actual_rps.html";
}

std::filesystem::path FigureJsonPath(const std::filesystem::path& html_path) {
  std::filesystem::path p = html_path;
  p.replace_extension(".json");
  return p;
}

std::string_view EmbeddedPlotlyJs() {
  return std::string_view(surge_plotly_js_begin,
                          static_cast<size_t>(surge_plotly_js_end - surge_plotly_js_begin));
}

std::string RenderFigureJson(const RpsFigure& fig) {
  std::string out = "{\"data\":[";
  for (size_t i = 0; i < fig.traces.size(); ++i) {
    if (i > 0) out += ",\n";
    out += TraceJson(fig.traces[i]);
  }
  out += "],\n\"layout\":";
  out += DumpScriptSafe(LayoutJson(fig));
  out += ",\n\"legend_table\":";
  out += DumpScriptSafe(LegendTableJson(fig));
  out += ",\n\"context\":";
  out += DumpScriptSafe(ContextJson(fig));
  out += ",\n\"stats\":";
  out += DumpScriptSafe(StatsJson(fig));
  out += "}\n";
  return out;
}

absl::Status WriteFigurePage(const RpsFigure& fig, const std::filesystem::path& html_path) {
  const std::string json = RenderFigureJson(fig);
  const Geometry g = Layout(fig.charts.size());

  std::string head =
      absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
                   HtmlEscape(HtmlPageTitle(fig)), "</title>\n<style>", kStyle,
                   "</style>\n<script>/* plotly.js, embedded by surge (MIT license) */\n");
  std::string body = absl::StrCat(
      "\n</script>\n</head>\n<body>\n<h1 id=\"surge-page-heading\" style=\"font-size:20px\">",
      fig.actual.has_value() ? "Actual sending rate (after the run)"
                             : "Expected sending rate (the plan, before the run)",
      "</h1>\n",
      fig.note.empty() ? std::string()
                       : absl::StrCat("<p id=\"surge-note\">", HtmlEscape(fig.note), "</p>\n"));
  // What happened during the run, in time order (also red lines on the time
  // axes).
  if (!fig.events.empty()) {
    absl::StrAppend(&body, "<div id=\"surge-events\"><b>During the run:</b><ul>\n");
    for (const RunEvent& e : fig.events) {
      absl::StrAppend(&body, "<li>", HtmlEscape(e.text), "</li>\n");
    }
    absl::StrAppend(&body, "</ul></div>\n");
  }
  absl::StrAppend(&body, "<table id=\"surge-context\"><tbody>\n");
  // Two label/value pairs per row: the block stays short above the charts.
  for (size_t k = 0; k < fig.context.size(); k += 2) {
    absl::StrAppend(&body, "<tr>");
    for (size_t j = k; j < std::min(k + 2, fig.context.size()); ++j) {
      absl::StrAppend(&body, "<th>", HtmlEscape(fig.context[j].label), "</th><td>",
                      HtmlEscape(fig.context[j].value), "</td>");
    }
    absl::StrAppend(&body, "</tr>\n");
  }
  absl::StrAppend(&body, "</tbody></table>\n");
  // TTFT / E2EL from actual vs from planned send (docs/LATENCY.md).
  if (!fig.latency.empty()) {
    absl::StrAppend(&body,
                    "<table id=\"surge-latency\"><thead><tr><th>Latency (ms), OK requests</th>"
                    "<th>N</th><th>from actual send p50 / p90 / p99</th>"
                    "<th>from planned send p50 / p90 / p99</th></tr></thead><tbody>\n");
    auto cell = [](const LatencyPercentiles& p) {
      return absl::StrCat(Num(p.p50_s * 1e3, "%.3f"), " / ", Num(p.p90_s * 1e3, "%.3f"), " / ",
                          Num(p.p99_s * 1e3, "%.3f"));
    };
    for (const LatencyView& v : fig.latency) {
      absl::StrAppend(&body, "<tr><th>", HtmlEscape(v.metric), "</th><td>", v.count, "</td><td>",
                      cell(v.from_actual_send), "</td><td>", cell(v.from_planned_send),
                      "</td></tr>\n");
    }
    absl::StrAppend(&body, "</tbody></table>\n");
  }
  absl::StrAppend(&body,
                  "<div id=\"surge-rps-plot\" "
                  "style=\"width:100%;min-width:900px;height:",
                  g.height_px, "px\"></div>\n<h2>Summary</h2>\n",
                  "<table id=\"surge-summary\"><tbody>\n");
  for (const auto& [label, value] : SummaryRows(fig)) {
    absl::StrAppend(&body, "<tr><th>", HtmlEscape(label), "</th><td>", HtmlEscape(value),
                    "</td></tr>\n");
  }
  absl::StrAppend(&body,
                  "</tbody></table>\n<h2>Legend Explanation</h2>\n"
                  "<table id=\"legend-explanation\">\n<thead><tr><th>Group</th><th>Legend "
                  "Item</th><th>Meaning</th><th>Computation</th><th>Criterion</th><th>Visual "
                  "Appearance</th></tr></thead>\n<tbody>\n");
  for (const FigureTrace& tr : fig.traces) {
    absl::StrAppend(&body, "<tr><td>", HtmlEscape(tr.row.group), "</td><td>",
                    HtmlEscape(tr.row.item), "</td><td>", HtmlEscape(tr.row.meaning), "</td><td>",
                    HtmlEscape(tr.row.computation), "</td><td>", HtmlEscape(tr.row.criterion),
                    "</td><td>", HtmlEscape(tr.row.appearance), "</td></tr>\n");
  }
  absl::StrAppend(&body, "</tbody></table>\n<script>\nconst surgeFigure = ");
  const std::string tail =
      ";\nPlotly.newPlot('surge-rps-plot', surgeFigure.data, surgeFigure.layout,\n"
      "                {displaylogo: false, responsive: true});\n</script>\n</body>\n</html>\n";

  const std::filesystem::path json_path = FigureJsonPath(html_path);
  if (absl::Status s = WriteFileAtomically(json_path, {json}); !s.ok()) return s;
  return WriteFileAtomically(html_path, {head, EmbeddedPlotlyJs(), body, json, tail});
}

absl::Status WriteExpectedPlotPage(const ArrivalSchedule& plan,
                                   const std::filesystem::path& html_path,
                                   const PageContext& context, std::string_view note,
                                   std::span<const ShadedBand> bands) {
  absl::StatusOr<RpsFigure> fig = BuildExpectedRpsFigure(plan);
  if (!fig.ok()) return fig.status();
  AddShadedBands(bands, *fig);
  fig->context = context;
  fig->note = std::string(note);
  return WriteFigurePage(*fig, html_path);
}

absl::Status WriteActualPlotPage(const ArrivalSchedule& plan, std::span<const ActualSend> sends,
                                 const std::filesystem::path& html_path, const PageContext& context,
                                 std::string_view note, std::span<const RunEvent> events,
                                 std::span<const LatencyView> latency,
                                 std::span<const LateMark> late_marks,
                                 const std::optional<SendLatenessPercentiles>& lateness,
                                 std::span<const ShadedBand> bands, const ReuseSeries* reuse,
                                 const ServerSeries* server, const std::vector<TurnSample>* turns) {
  absl::StatusOr<RpsFigure> fig = BuildActualRpsFigure(plan, sends, lateness);
  if (!fig.ok()) return fig.status();
  AddShadedBands(bands, *fig);
  AddLateMarks(plan, late_marks, *fig);
  if (reuse != nullptr) AddReuseChart(*reuse, *fig);
  if (turns != nullptr) AddSessionCharts(*turns, plan.offset_s, *fig);
  if (server != nullptr) AddServerTraces(*server, *fig);
  fig->context = context;
  fig->note = std::string(note);
  fig->latency.assign(latency.begin(), latency.end());
  AddRunEvents(std::vector<RunEvent>(events.begin(), events.end()), *fig);
  return WriteFigurePage(*fig, html_path);
}

}  // namespace surge::coordinator
