#include "coordinator/results/class_summary.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {

struct ClassSummaries::Class {
  Class(std::string name_in, std::string model_in, double intended, surge::v1::GoodputConfig slo)
      : name(std::move(name_in)),
        model(std::move(model_in)),
        intended_rate_rps(intended),
        goodput(std::move(slo)),
        summary(&goodput, StreamingStats::kUnlimited) {}
  std::string name, model;
  double intended_rate_rps;
  surge::v1::GoodputConfig goodput;  // before `summary`, which points at it
  SummaryAccumulator summary;
};

ClassSummaries::ClassSummaries(const ArrivalSchedule& plan, const surge::v1::RunConfig& config) {
  std::vector<std::vector<double>> offsets(plan.classes.size());
  for (size_t i = 0; i < plan.size() && i < plan.class_index.size(); ++i) {
    offsets[plan.class_index[i]].push_back(plan.offset_s[i]);
  }
  for (size_t c = 0; c < plan.classes.size(); ++c) {
    const surge::v1::TrafficClass* k = static_cast<int>(c) < config.classes_size()
                                           ? &config.classes(static_cast<int>(c))
                                           : nullptr;
    surge::v1::GoodputConfig slo =
        k != nullptr && k->has_goodput() ? k->goodput() : config.goodput();
    classes_.push_back(std::make_unique<Class>(plan.classes[c].name,
                                               k != nullptr ? k->model() : std::string(),
                                               IntendedRateRps(offsets[c]), std::move(slo)));
  }
}

ClassSummaries::~ClassSummaries() = default;

void ClassSummaries::Add(const surge::v1::RequestRecord& record) {
  if (record.traffic_class().empty()) return;
  for (const auto& c : classes_) {
    if (c->name == record.traffic_class()) {
      c->summary.Add(record);
      return;
    }
  }
}

std::vector<ClassSummary> ClassSummaries::Finish() {
  std::vector<ClassSummary> out;
  for (const auto& c : classes_) {
    ClassSummary s{c->name, c->model, c->intended_rate_rps, c->summary.Finish()};
    s.summary.intended_rate_rps = c->intended_rate_rps;
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

nlohmann::json StatsJson(const MetricStats& m) {
  return {{"count", m.count},
          {"mean", JsonNumber(m.mean)},
          {"p50", JsonNumber(m.p50)},
          {"p99", JsonNumber(m.p99)}};
}

std::string Ms(double seconds) {
  return std::isfinite(seconds) ? absl::StrFormat("%.2f", seconds * 1e3) : std::string("n/a");
}

std::string Rps(double v) {
  return std::isfinite(v) ? absl::StrFormat("%.2f", v) : std::string("n/a");
}

}  // namespace

nlohmann::json ClassSummariesToJson(const std::vector<ClassSummary>& classes) {
  nlohmann::json list = nlohmann::json::array();
  for (const ClassSummary& c : classes) {
    const RunSummary& s = c.summary;
    nlohmann::json j;
    j["name"] = c.name;
    j["model"] = c.model;
    j["requests"] = {{"total", s.total}, {"succeeded", s.succeeded}, {"sent", s.sent}};
    j["intended_rate_rps"] = JsonNumber(c.intended_rate_rps);
    j["achieved_rate_rps"] = JsonNumber(s.achieved_rate_rps);
    j["lateness_s"] = StatsJson(s.lateness_s);
    j["ttft_s"] = StatsJson(s.ttft_s);
    j["tpot_s"] = StatsJson(s.tpot_s);
    j["e2el_s"] = StatsJson(s.e2el_s);
    if (s.has_goodput) {
      j["goodput"] = {{"good_requests", s.good_requests},
                      {"goodput_rps", JsonNumber(s.goodput_rps)}};
    }
    list.push_back(std::move(j));
  }
  return list;
}

std::string ClassSummariesCsv(const std::vector<ClassSummary>& classes) {
  if (classes.empty()) return "";
  std::string out =
      "\nClass,Model,Requests,Succeeded,Intended RPS,Achieved RPS,Lateness P50 (ms),Lateness P99 "
      "(ms),TTFT P50 (ms),TTFT P99 (ms),TPOT P50 (ms),TPOT P99 (ms),E2EL P50 (ms),E2EL P99 "
      "(ms),Goodput (RPS)\n";
  auto cell = [](double v) { return std::isfinite(v) ? absl::StrFormat("%.4f", v) : ""; };
  for (const ClassSummary& c : classes) {
    const RunSummary& s = c.summary;
    absl::StrAppend(&out, c.name, ",", c.model, ",", s.total, ",", s.succeeded, ",",
                    cell(c.intended_rate_rps), ",", cell(s.achieved_rate_rps), ",",
                    cell(s.lateness_s.p50 * 1e3), ",", cell(s.lateness_s.p99 * 1e3), ",",
                    cell(s.ttft_s.p50 * 1e3), ",", cell(s.ttft_s.p99 * 1e3), ",",
                    cell(s.tpot_s.p50 * 1e3), ",", cell(s.tpot_s.p99 * 1e3), ",",
                    cell(s.e2el_s.p50 * 1e3), ",", cell(s.e2el_s.p99 * 1e3), ",",
                    s.has_goodput ? cell(s.goodput_rps) : std::string(), "\n");
  }
  return out;
}

std::string FormatClassSummaries(const std::vector<ClassSummary>& classes) {
  if (classes.empty()) return "";
  std::string out = "------------- traffic classes -------------\n";
  for (const ClassSummary& c : classes) {
    const RunSummary& s = c.summary;
    absl::StrAppend(&out, "  class ", c.name, c.model.empty() ? "" : " (model " + c.model + ")",
                    "\n");
    auto row = [&out](const std::string& name, const std::string& value) {
      absl::StrAppend(&out, absl::StrFormat("    %-34s %s\n", name, value));
    };
    row("Requests (total / succeeded)", absl::StrCat(s.total, " / ", s.succeeded));
    row("Intended / achieved rate (RPS)",
        absl::StrCat(Rps(c.intended_rate_rps), " / ", Rps(s.achieved_rate_rps)));
    row("Lateness p50 / p99 (ms)", absl::StrCat(Ms(s.lateness_s.p50), " / ", Ms(s.lateness_s.p99)));
    row("TTFT p50 / p99 (ms)", absl::StrCat(Ms(s.ttft_s.p50), " / ", Ms(s.ttft_s.p99)));
    row("TPOT p50 / p99 (ms)", absl::StrCat(Ms(s.tpot_s.p50), " / ", Ms(s.tpot_s.p99)));
    row("E2EL p50 / p99 (ms)", absl::StrCat(Ms(s.e2el_s.p50), " / ", Ms(s.e2el_s.p99)));
    if (s.has_goodput) {
      row("Goodput (RPS, good requests)",
          absl::StrCat(Rps(s.goodput_rps), " (", s.good_requests, ")"));
    }
  }
  return out;
}

}  // namespace surge::coordinator
