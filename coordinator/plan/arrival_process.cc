#include "coordinator/plan/arrival_process.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator/plan/number_format.h"
#include "coordinator/plan/replay_schedule.h"
#include "coordinator/plan/traffic_config.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;

// Points of the theoretical λ(t) on the expected page: half its budget of
// 4,000 points for one line, so the edges' both sides fit too.
constexpr size_t kTheoreticalCurvePoints = 2000;

std::string Rate(double rps) { return absl::StrFormat("%.6g RPS", rps); }

// Composed traffic describes itself from its profile and sampler.
TrafficDescription DescribeComposed(const ResolvedTraffic& t, const std::string& sampler_title) {
  const RateProfile& profile = *t.profile;
  TrafficDescription d;
  d.title = absl::StrCat(profile.Title(), " × ", sampler_title);
  d.short_title = absl::StrCat("Peak Rate: ", FormatShort(t.target_rate_rps), " RPS | ",
                               profile.ShortTitle(), " | ", sampler_title);
  TheoreticalRate line;
  line.name = kTheoreticalRateName;
  line.hover = "t = %{x:.4f} s<br>λ(t) = %{y:.4g}";
  line.meaning =
      "The intended rate λ(t) of the traffic profile, without the sampler's randomness "
      "(docs/TRAFFIC.md).";
  line.curve = profile.Curve(kTheoreticalCurvePoints);
  line.computation = absl::StrCat(profile.Formula(), "; drawn at ", FormatCount(line.curve.size()),
                                  " times (evenly spaced, plus both sides of every stage and "
                                  "spike edge).");
  line.criterion = absl::StrCat("Profile: ", profile.Title(), "; sampler: ", sampler_title,
                                "; expected ", absl::StrFormat("%.0f", profile.TotalCount()),
                                " requests over ", FormatShort(profile.DurationS()), " s (mean ",
                                FormatShort(profile.MeanRateRps()), " RPS).");
  d.theoretical = std::move(line);
  d.log_line = absl::StrFormat(
      "traffic %s (expected %.0f requests over %g s, mean %g RPS, peak %g RPS)", d.title,
      profile.TotalCount(), profile.DurationS(), t.request_rate_rps, t.target_rate_rps);
  d.context = {
      {"Request rate", absl::StrCat(profile.Title(), " (mean ", Rate(t.request_rate_rps), ", peak ",
                                    Rate(t.target_rate_rps), "; docs/TRAFFIC.md)")},
      {"Interval sampler", sampler_title},
      {"Ramp-up", "none"}};
  return d;
}

// A composed traffic's profile and sampler, each built once.
struct ComposedTraffic {
  ResolvedTraffic traffic;
  std::unique_ptr<IntervalSampler> sampler;
};

absl::StatusOr<ComposedTraffic> MakeComposedTraffic(const RunConfig& config) {
  ComposedTraffic c;
  ResolvedTraffic& t = c.traffic;
  t.burstiness = config.traffic_cfg().sampler() == surge::v1::SAMPLER_KIND_MMPP
                     ? 1.0
                     : config.traffic_cfg().burstiness();
  std::vector<double> betas;
  auto profile = MakeRateProfile(config, &betas);
  if (!profile.ok()) return profile.status();
  t.profile = std::shared_ptr<const RateProfile>(std::move(*profile));
  c.sampler = MakeIntervalSampler(config, std::move(betas));
  t.request_rate_rps = t.profile->MeanRateRps();
  // The peak to 6 significant digits: a sampled edge of a cosine is a few
  // ulps off its closed value, and the page title shows this number.
  t.target_rate_rps = std::stod(absl::StrFormat("%.6g", t.profile->PeakRateRps()));
  t.description = DescribeComposed(t, c.sampler->Title());
  return c;
}

// AISBench keys only: the seed's plan, unchanged (R-RATE … R-ANOM).
class SeedProcess : public ArrivalProcess {
 public:
  SeedProcess(ResolvedTraffic traffic, uint64_t n) : traffic_(std::move(traffic)), n_(n) {}
  const ResolvedTraffic& Traffic() const override { return traffic_; }
  absl::StatusOr<ArrivalSchedule> Generate(uint64_t seed) const override {
    return BuildArrivalSchedule(traffic_, n_, seed);
  }

 private:
  ResolvedTraffic traffic_;
  uint64_t n_;
};

class ReplayProcess : public ArrivalProcess {
 public:
  ReplayProcess(std::vector<double> offsets, double time_scale)
      : offsets_(std::move(offsets)),
        time_scale_(time_scale),
        traffic_(ResolveReplayTraffic(offsets_, time_scale_)) {}
  const ResolvedTraffic& Traffic() const override { return traffic_; }
  absl::StatusOr<ArrivalSchedule> Generate(uint64_t seed) const override {
    return BuildReplaySchedule(offsets_, seed, time_scale_);
  }

 private:
  std::vector<double> offsets_;
  double time_scale_;
  ResolvedTraffic traffic_;
};

class ComposedProcess : public ArrivalProcess {
 public:
  ComposedProcess(ComposedTraffic composed, uint64_t max_requests)
      : traffic_(std::move(composed.traffic)),
        sampler_(std::move(composed.sampler)),
        max_(max_requests) {}
  const ResolvedTraffic& Traffic() const override { return traffic_; }
  // The sampler restarts for every plan (SampleArrivals resets it), so a
  // plan depends on the seed alone.
  absl::StatusOr<ArrivalSchedule> Generate(uint64_t seed) const override {
    auto arrivals = SampleArrivals(*traffic_.profile, *sampler_, max_, seed);
    if (!arrivals.ok()) return arrivals.status();
    return ScheduleFromArrivals(*arrivals, traffic_, seed);
  }

 private:
  ResolvedTraffic traffic_;
  std::unique_ptr<IntervalSampler> sampler_;
  uint64_t max_;
};

}  // namespace

ArrivalSchedule ScheduleFromArrivals(const std::vector<SampledArrival>& arrivals,
                                     const ResolvedTraffic& traffic, uint64_t seed) {
  ArrivalSchedule plan;
  plan.traffic = traffic;
  plan.seed = seed;
  const size_t n = arrivals.size();
  plan.rate_rps.resize(n);
  plan.interval_s.resize(n);
  plan.offset_s.resize(n);
  plan.anomaly.resize(n);
  double previous = 0;
  for (size_t i = 0; i < n; ++i) {
    plan.offset_s[i] = arrivals[i].offset_s;
    plan.rate_rps[i] = arrivals[i].rate_rps;
    plan.interval_s[i] = arrivals[i].offset_s - previous;
    previous = arrivals[i].offset_s;
    // A zero rate (the edge of a pause) has no expected interval: only the
    // timing class applies.
    plan.anomaly[i] = plan.rate_rps[i] > 0 ? ClassifyInterval(plan.interval_s[i], plan.rate_rps[i],
                                                              arrivals[i].burstiness)
                                           : ClassifyInterval(plan.interval_s[i], 1, 0);
  }
  return plan;
}

absl::StatusOr<std::unique_ptr<ArrivalProcess>> MakeArrivalProcess(
    const RunConfig& config, const std::vector<double>* replay_offsets_s) {
  if (replay_offsets_s != nullptr) {
    return std::unique_ptr<ArrivalProcess>(
        new ReplayProcess(*replay_offsets_s, TraceTimeScale(config)));
  }
  if (!UsesComposedTraffic(config)) {
    return std::unique_ptr<ArrivalProcess>(
        new SeedProcess(ResolveSeedTraffic(config), config.num_prompts()));
  }
  if (std::vector<std::string> problems = TrafficKeyProblems(config); !problems.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration:\n", absl::StrJoin(problems, "\n")));
  }
  auto composed = MakeComposedTraffic(config);
  if (!composed.ok()) return composed.status();
  // With stages num_prompts caps the run; without (spikes or mmpp over the
  // AISBench keys) it sized the base stage, and spikes add to it: bounded
  // at 4× the expected count plus 1000 so the loop always ends.
  const uint64_t cap =
      config.traffic_cfg().stages_size() > 0
          ? config.num_prompts()
          : static_cast<uint64_t>(4 * composed->traffic.profile->TotalCount()) + 1000;
  return std::unique_ptr<ArrivalProcess>(new ComposedProcess(*std::move(composed), cap));
}

ResolvedTraffic ResolveTraffic(const RunConfig& config) {
  if (!UsesComposedTraffic(config)) return ResolveSeedTraffic(config);
  auto composed = MakeComposedTraffic(config);
  if (composed.ok()) return std::move(composed->traffic);
  ResolvedTraffic t;
  t.burstiness = config.traffic_cfg().sampler() == surge::v1::SAMPLER_KIND_MMPP
                     ? 1.0
                     : config.traffic_cfg().burstiness();
  return t;
}

std::vector<std::string> PlanWarnings(const ArrivalSchedule& plan) {
  const ResolvedTraffic& t = plan.traffic;
  if (t.trace_replay || t.instant || !(t.burstiness > 0) || !(t.target_rate_rps < 500) ||
      plan.size() < 10) {
    return {};
  }
  const size_t timing = plan.Count(Anomaly::kTiming);
  if (2 * timing < plan.size()) return {};
  return {absl::StrFormat(
      "burstiness %g: %d of %d planned intervals are under 1 ms (timing anomalies), so the "
      "requests go out in bursts rather than at about %g RPS; a larger burstiness (0.5 is "
      "already bursty, 1 = Poisson) spreads them",
      t.burstiness, timing, plan.size(), t.target_rate_rps)};
}

}  // namespace surge::coordinator
