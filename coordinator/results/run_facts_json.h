// The run facts (surge/v1/run_facts.proto) as the summary JSON's "run"
// block, and back. Written by protobuf's JSON printer with the proto's
// field names, then shaped as the block has always been: 64-bit integers as
// JSON numbers (not strings), doubles as JSON doubles, an infinite double as
// "inf" (NaN as null), and an unset field marked (null_when_unset) as null.
// Facts without a stop reason (a run whose summary was never written) give
// only the fields that are set.
// Read back with protobuf's JSON parser, which ignores keys it does not know
// (a summary from an older or newer surge).
#ifndef SURGE_COORDINATOR_RESULTS_RUN_FACTS_JSON_H_
#define SURGE_COORDINATOR_RESULTS_RUN_FACTS_JSON_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "surge/v1/run_facts.pb.h"

namespace surge::coordinator {

// The "run" block for `facts`. Pure.
nlohmann::json RunFactsToJson(const surge::v1::RunFacts& facts);

// The facts in a "run" block written by RunFactsToJson (or by an earlier
// surge: the same keys). Errors: INVALID_ARGUMENT when `run` is not an
// object or a key holds a value of the wrong type.
absl::StatusOr<surge::v1::RunFacts> RunFactsFromJson(const nlohmann::json& run);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_RUN_FACTS_JSON_H_
