#include "coordinator/plan/traffic_classes.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/plan/arrival_process.h"
#include "coordinator/plan/number_format.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;

// 64-bit FNV-1a of `text`'s bytes.
uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t SplitMix64Finalizer(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// (n − 1)/span of a class's offsets; 0 when it has fewer than two requests
// or they are all at one instant.
double MeanRateRps(const ArrivalSchedule& plan) {
  if (plan.size() < 2) return 0;
  const double span = plan.offset_s.back() - plan.offset_s.front();
  return span > 0 ? static_cast<double>(plan.size() - 1) / span : 0;
}

// The merged plan's traffic: the classes side by side.
ResolvedTraffic DescribeClasses(const std::vector<TrafficClassPlan>& classes, double total_rps) {
  ResolvedTraffic t;
  t.request_rate_rps = total_rps;
  t.target_rate_rps = total_rps;
  TrafficDescription& d = t.description;
  std::vector<std::string> titles, shorts, logs;
  for (const TrafficClassPlan& c : classes) {
    titles.push_back(absl::StrCat(c.name, ": ", c.traffic.description.title));
    shorts.push_back(absl::StrCat(c.name, " ", c.traffic.description.short_title));
    logs.push_back(absl::StrCat(c.name, " ", c.requests, " requests (seed ", c.seed, ", ",
                                c.traffic.description.log_line, ")"));
    d.context.push_back(
        {absl::StrCat("Class ", c.name), absl::StrCat(FormatCount(c.requests), " requests, seed ",
                                                      c.seed, ", ", c.traffic.description.title)});
  }
  d.title = absl::StrCat(classes.size(), " traffic classes: ", absl::StrJoin(titles, " + "));
  d.short_title = absl::StrCat("Traffic classes: ", absl::StrJoin(shorts, " + "));
  d.log_line =
      absl::StrCat(classes.size(), " traffic classes merged by time: ", absl::StrJoin(logs, "; "));
  d.context.insert(d.context.begin(),
                   {"Request rate",
                    absl::StrCat(FormatShort(total_rps), " RPS in all (the classes' mean rates)")});
  return t;
}

}  // namespace

uint64_t ClassSeed(uint64_t run_seed, std::string_view name) {
  return SplitMix64Finalizer(run_seed + Fnv1a64(name));
}

RunConfig ClassRunConfig(const RunConfig& config, int index) {
  const surge::v1::TrafficClass& k = config.classes(index);
  RunConfig c = config;
  c.clear_classes();
  if (k.has_request_rate()) {
    c.set_request_rate(k.request_rate());
  } else {
    c.clear_request_rate();
  }
  *c.mutable_traffic_cfg() = k.traffic_cfg();
  if (k.has_num_prompts()) c.set_num_prompts(k.num_prompts());
  if (!k.model().empty()) c.mutable_target()->set_model(k.model());
  for (const std::string& h : k.headers()) c.mutable_target()->add_headers(h);
  if (!k.dataset_name().empty()) {
    c.mutable_dataset()->set_dataset_name(k.dataset_name());
    c.mutable_dataset()->set_dataset_path(k.dataset_path());
  } else if (!k.dataset_path().empty()) {
    c.mutable_dataset()->set_dataset_path(k.dataset_path());
  }
  if (k.has_random_input_len()) c.mutable_dataset()->set_random_input_len(k.random_input_len());
  if (k.has_random_output_len()) {
    c.mutable_dataset()->set_random_output_len(k.random_output_len());
  }
  if (k.has_goodput()) *c.mutable_goodput() = k.goodput();
  c.set_seed(ClassSeed(config.seed(), k.name()));
  return c;
}

absl::StatusOr<ArrivalSchedule> MergeClassPlans(std::vector<ArrivalSchedule> plans,
                                                const std::vector<std::string>& names,
                                                const std::vector<uint64_t>& seeds,
                                                uint64_t run_seed) {
  if (plans.empty() || plans.size() != names.size() || plans.size() != seeds.size() ||
      plans.size() > std::numeric_limits<uint16_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("MergeClassPlans: ", plans.size(), " plans, ",
                                                   names.size(), " names, ", seeds.size(),
                                                   " seeds (1..65535 each, as many)"));
  }
  // Phase 1: every request as (offset, class, index in its class), stably
  // sorted by offset: ties stay in class order, a class keeps its order.
  struct Ref {
    double offset_s;
    uint16_t c;
    uint64_t k;
  };
  std::vector<Ref> refs;
  size_t total = 0;
  for (const ArrivalSchedule& p : plans) total += p.size();
  refs.reserve(total);
  for (size_t c = 0; c < plans.size(); ++c) {
    for (size_t k = 0; k < plans[c].size(); ++k) {
      refs.push_back({plans[c].offset_s[k], static_cast<uint16_t>(c), k});
    }
  }
  std::stable_sort(refs.begin(), refs.end(),
                   [](const Ref& a, const Ref& b) { return a.offset_s < b.offset_s; });
  // Phase 2: the merged arrays.
  ArrivalSchedule merged;
  merged.seed = run_seed;
  merged.rate_rps.reserve(total);
  merged.interval_s.reserve(total);
  merged.offset_s.reserve(total);
  merged.anomaly.reserve(total);
  merged.class_index.reserve(total);
  merged.class_request.reserve(total);
  for (const Ref& r : refs) {
    const ArrivalSchedule& p = plans[r.c];
    merged.offset_s.push_back(r.offset_s);
    merged.rate_rps.push_back(p.rate_rps[r.k]);
    merged.interval_s.push_back(p.interval_s[r.k]);
    merged.anomaly.push_back(p.anomaly[r.k]);
    merged.class_index.push_back(r.c);
    merged.class_request.push_back(r.k);
  }
  // Phase 3: the classes and their description.
  double total_rps = 0;
  for (size_t c = 0; c < plans.size(); ++c) {
    total_rps += MeanRateRps(plans[c]);
    merged.classes.push_back(
        {names[c], seeds[c], std::move(plans[c].traffic), static_cast<uint64_t>(plans[c].size())});
  }
  merged.traffic = DescribeClasses(merged.classes, total_rps);
  return merged;
}

absl::StatusOr<ArrivalSchedule> BuildClassesPlan(const RunConfig& config) {
  std::vector<ArrivalSchedule> plans;
  std::vector<std::string> names;
  std::vector<uint64_t> seeds;
  for (int i = 0; i < config.classes_size(); ++i) {
    const RunConfig one = ClassRunConfig(config, i);
    auto process = MakeArrivalProcess(one);
    if (!process.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("classes[", i, "]: ", process.status().message()));
    }
    auto plan = (*process)->Generate(one.seed());
    if (!plan.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("classes[", i, "]: ", plan.status().message()));
    }
    plans.push_back(*std::move(plan));
    names.push_back(config.classes(i).name());
    seeds.push_back(one.seed());
  }
  return MergeClassPlans(std::move(plans), names, seeds, config.seed());
}

ArrivalSchedule ClassSubPlan(const ArrivalSchedule& merged, size_t c) {
  ArrivalSchedule sub;
  if (c >= merged.classes.size()) return sub;
  sub.traffic = merged.classes[c].traffic;
  sub.seed = merged.classes[c].seed;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (merged.class_index[i] != c) continue;
    sub.rate_rps.push_back(merged.rate_rps[i]);
    sub.interval_s.push_back(merged.interval_s[i]);
    sub.offset_s.push_back(merged.offset_s[i]);
    sub.anomaly.push_back(merged.anomaly[i]);
  }
  return sub;
}

}  // namespace surge::coordinator
