#include "coordinator/sweep/sweep_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/atomic_file.h"
#include "coordinator/capacity/run_folder.h"
#include "google/protobuf/util/json_util.h"

namespace surge::coordinator {
namespace {

using nlohmann::json;

json ProtoJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(m, &text, options);
  return json::parse(text);
}

// The finished points by rate; of a rate run twice (an invalid point run
// again with more workers) only its last try.
std::vector<const SweepPoint*> FinishedByRate(const std::vector<SweepPoint>& points) {
  std::vector<const SweepPoint*> out;
  for (const SweepPoint& p : points) {
    if (!p.finished()) continue;
    auto same = std::find_if(out.begin(), out.end(),
                             [&p](const SweepPoint* q) { return q->rate_rps == p.rate_rps; });
    if (same == out.end()) {
      out.push_back(&p);
    } else if (p.attempt >= (*same)->attempt) {
      *same = &p;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SweepPoint* a, const SweepPoint* b) {
    return a->rate_rps < b->rate_rps;
  });
  return out;
}

const SweepPoint* PointAt(const std::vector<SweepPoint>& points, double rate) {
  const SweepPoint* found = nullptr;
  for (const SweepPoint& p : points) {
    if (p.rate_rps == rate && p.certified()) found = &p;
  }
  return found;
}

std::string Rate(double r) { return RateText(r); }

std::string Goodput(const SweepPoint* p) {
  if (p == nullptr) return "";
  if (p->status == PointStatus::kSaturated) return absl::StrCat("saturated at ", Rate(p->rate_rps));
  if (!std::isfinite(p->goodput_fraction)) return absl::StrCat("passed at ", Rate(p->rate_rps));
  return absl::StrFormat("goodput %.1f %% at %s", p->goodput_fraction * 100, Rate(p->rate_rps));
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvNum(double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : ""; }

}  // namespace

SearchAnswer ListAnswer(const std::vector<SweepPoint>& points, const SweepObjective& objective) {
  SearchAnswer a;
  for (const SweepPoint* p : FinishedByRate(points)) {
    const PointOutcome o = OutcomeOf(*p, objective);
    if (o == PointOutcome::kInvalid) {
      a.incomplete_reason = absl::StrCat("surge could not keep the point at ", Rate(p->rate_rps),
                                         " RPS (", p->note, "); what lies above it is unknown");
      return a;
    }
    if (o == PointOutcome::kFail) {
      a.min_failing_rps = p->rate_rps;
      a.complete = true;
      return a;
    }
    a.max_rate_rps = p->rate_rps;
  }
  a.incomplete_reason = "every point passed: the limit is above the highest rate swept";
  return a;
}

std::string AnswerText(const SearchAnswer& a, const std::vector<SweepPoint>& points) {
  const SweepPoint* lo = a.max_rate_rps ? PointAt(points, *a.max_rate_rps) : nullptr;
  const SweepPoint* hi = a.min_failing_rps ? PointAt(points, *a.min_failing_rps) : nullptr;
  std::string text;
  if (a.max_rate_rps && a.min_failing_rps) {
    text = absl::StrFormat("max rate within SLO: %s RPS ± %s (%s, %s)", Rate(*a.max_rate_rps),
                           Rate(*a.min_failing_rps - *a.max_rate_rps), Goodput(lo), Goodput(hi));
  } else if (a.max_rate_rps) {
    text = absl::StrFormat("max rate within SLO: at least %s RPS (%s)", Rate(*a.max_rate_rps),
                           Goodput(lo));
  } else if (a.min_failing_rps) {
    text = absl::StrFormat("no rate within SLO: the lowest tried, %s RPS, fails (%s)",
                           Rate(*a.min_failing_rps), Goodput(hi));
  } else {
    text = "no certified point: no answer";
  }
  if (!a.complete && !a.incomplete_reason.empty()) {
    absl::StrAppend(&text, "; incomplete: ", a.incomplete_reason);
  }
  return text;
}

json SweepJson(const SweepReport& r) {
  json points = json::array();
  for (const SweepPoint& p : r.points) points.push_back(PointJson(p));
  json j = {{"surge_version", r.surge_version},
            {"started_at_utc", r.started_at_utc},
            {"sweep", ProtoJson(r.sweep)},
            {"objective",
             {{"goodput", ProtoJson(r.goodput)},
              {"has_goodput", r.objective.has_goodput},
              {"goodput_fraction", r.objective.goodput_fraction}}},
            {"finished", r.finished},
            {"points", std::move(points)}};
  if (r.answer) {
    j["answer"] = {
        {"max_rate_rps", r.answer->max_rate_rps ? json(*r.answer->max_rate_rps) : json(nullptr)},
        {"min_failing_rps",
         r.answer->min_failing_rps ? json(*r.answer->min_failing_rps) : json(nullptr)},
        {"complete", r.answer->complete},
        {"incomplete_reason", r.answer->incomplete_reason},
        {"text", r.answer_text}};
    j["max_rate_rps"] = j["answer"]["max_rate_rps"];
  }
  return j;
}

std::string SweepCsv(const SweepReport& r) {
  std::string out =
      "number,rate_rps,status,attempt,workers,requests,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,"
      "tpot_p99_ms,e2el_p50_ms,e2el_p99_ms,request_throughput_rps,output_token_throughput,"
      "goodput_rps,goodput_fraction,peak_waiting,certified,achieved_vs_intended,"
      "lateness_p99_ms,lateness_limit_ms,ks_distance,ks_critical,clock_uncertainty_ms,cause,"
      "folder,note\n";
  for (const SweepPoint& p : r.points) {
    const RunCertificate& c = p.certificate;
    absl::StrAppend(
        &out, p.number, ",", CsvNum(p.rate_rps), ",", std::string(PointStatusName(p.status)), ",",
        p.attempt, ",", p.workers, ",", p.requests, ",", CsvNum(p.ttft_p50_ms), ",",
        CsvNum(p.ttft_p99_ms), ",", CsvNum(p.tpot_p50_ms), ",", CsvNum(p.tpot_p99_ms), ",",
        CsvNum(p.e2el_p50_ms), ",", CsvNum(p.e2el_p99_ms), ",", CsvNum(p.request_throughput_rps),
        ",", CsvNum(p.output_token_throughput), ",", CsvNum(p.goodput_rps), ",",
        CsvNum(p.goodput_fraction), ",", CsvNum(p.peak_waiting), ",",
        p.certified() ? "true" : "false", ",", CsvNum(c.achieved_vs_intended), ",",
        CsvNum(c.lateness_p99_ms), ",", CsvNum(c.lateness_limit_ms), ",", CsvNum(c.ks_distance),
        ",", CsvNum(c.ks_critical), ",", CsvNum(c.clock_uncertainty_ms), ",", CsvField(c.cause),
        ",", CsvField(p.folder), ",", CsvField(p.note), "\n");
  }
  return out;
}

absl::Status WriteSweepFiles(const SweepReport& report, const std::filesystem::path& folder) {
  const std::string text = SweepJson(report).dump(2) + "\n";
  if (absl::Status s = WriteFileAtomically(folder / "sweep.json", {text}); !s.ok()) return s;
  const std::string csv = SweepCsv(report);
  return WriteFileAtomically(folder / "sweep.csv", {csv});
}

absl::StatusOr<SavedSweep> ReadSavedSweep(const std::filesystem::path& folder) {
  const std::filesystem::path path = folder / "sweep.json";
  absl::StatusOr<json> j = ReadJsonFile(path);
  if (!j.ok()) return j.status();
  auto bad = [&path](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", what));
  };
  if (!j->is_object() || !j->contains("sweep") || !(*j)["sweep"].is_object() ||
      !j->contains("points") || !(*j)["points"].is_array()) {
    return bad("not a sweep's file (it needs the objects \"sweep\" and \"points\")");
  }
  SavedSweep saved;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (auto s =
          google::protobuf::util::JsonStringToMessage((*j)["sweep"].dump(), &saved.sweep, options);
      !s.ok()) {
    return bad(absl::StrCat("\"sweep\": ", std::string(s.message())));
  }
  for (const json& e : (*j)["points"]) {
    if (!e.is_object() || !e.contains("rate_rps") || !e["rate_rps"].is_number() ||
        !e.contains("folder") || !e["folder"].is_string() || !e.contains("status") ||
        !e["status"].is_string()) {
      return bad("a point without rate_rps, folder or status");
    }
    const std::string status = e["status"].get<std::string>();
    if (status == "interrupted" || status == "failed") continue;
    SweepPoint p;
    p.number = e.value("number", 0);
    p.rate_rps = e["rate_rps"].get<double>();
    p.attempt = e.value("attempt", 0);
    p.folder = e["folder"].get<std::string>();
    saved.finished.push_back(std::move(p));
  }
  return saved;
}

}  // namespace surge::coordinator
