// Traffic classes (docs/TRAFFIC.md "Traffic classes"): several tenants,
// each with its own arrival process made from its own keys and its own
// seed, merged by time into one plan. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_TRAFFIC_CLASSES_H_
#define SURGE_COORDINATOR_PLAN_TRAFFIC_CLASSES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/plan/arrival_schedule.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// The seed of a class's own generator: SplitMix64's finalizer of the run
// seed plus the 64-bit FNV-1a hash of the class name's bytes. The same run
// seed and name give the same seed on every platform; renaming a class or
// changing the run seed changes it. Pure.
uint64_t ClassSeed(uint64_t run_seed, std::string_view name);

// The configuration of class `index` as a run of its own: `config` without
// classes, with the class's request_rate (unset when the class gives none)
// and traffic_cfg (replacing the top level's), and, when the class gives
// them, its num_prompts, model, dataset keys, lengths and goodput; its
// headers after the top level's; seed = ClassSeed(config.seed(), name).
// Planning it alone gives exactly that class's requests of the merged plan.
surge::v1::RunConfig ClassRunConfig(const surge::v1::RunConfig& config, int index);

// Merges the classes' own plans (`plans[c]` is class c's, named
// `names[c]`, made with seed `seeds[c]`) by planned offset; a tie goes to
// the class listed first, and within a class the order is kept. Each request
// keeps its class's λ_i, Δ_i (the interval in its own class's plan) and
// anomaly class. The merged plan's seed is `run_seed`; its traffic describes
// the classes (title, log line, run context rows per class); its
// request_rate_rps and target_rate_rps are the sum of the classes' mean
// rates (N_c − 1)/span_c. Errors: INVALID_ARGUMENT for no plans, sizes that
// differ, more than 65535 classes.
absl::StatusOr<ArrivalSchedule> MergeClassPlans(std::vector<ArrivalSchedule> plans,
                                                const std::vector<std::string>& names,
                                                const std::vector<uint64_t>& seeds,
                                                uint64_t run_seed);

// The merged plan of a validated config with classes: each class's
// ArrivalProcess (MakeArrivalProcess on ClassRunConfig) generated with its
// class seed, then MergeClassPlans. Errors: INVALID_ARGUMENT naming the
// class ("classes[1]: ...") when a class's process cannot be made.
absl::StatusOr<ArrivalSchedule> BuildClassesPlan(const surge::v1::RunConfig& config);

// Class `c`'s requests of a merged plan, as a plan of their own (offsets,
// λ_i, Δ_i, anomaly classes; its class's traffic and seed), in order. The
// inverse of MergeClassPlans. Pure.
ArrivalSchedule ClassSubPlan(const ArrivalSchedule& merged, size_t c);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_TRAFFIC_CLASSES_H_
