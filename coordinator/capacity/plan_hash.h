// The plan's fingerprint (RunFacts.plan_hash): FNV-1a 64-bit of the plan
// CSV's bytes as written. An exact replay (--plan-file) writes the very same
// bytes (its numbers read back exactly and are written with the same 17
// digits), so two runs of one plan have the same hash.
#ifndef SURGE_COORDINATOR_CAPACITY_PLAN_HASH_H_
#define SURGE_COORDINATOR_CAPACITY_PLAN_HASH_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace surge::coordinator {

// FNV-1a 64-bit: offset basis 0xcbf29ce484222325, prime 0x100000001b3,
// continued from `hash` (so a file can be hashed in pieces). Pure.
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ULL;
uint64_t Fnv1a64(std::string_view bytes, uint64_t hash = kFnv1a64Basis);

// `hash` as 16 lower-case hex digits ("af63bd4c8601b7df"). Pure.
std::string PlanHashHex(uint64_t hash);

// PlanHashHex of the file's bytes, read in pieces. Errors: NOT_FOUND naming
// the file when it cannot be opened; INTERNAL on a read error.
absl::StatusOr<std::string> PlanFileHash(const std::filesystem::path& plan_csv);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CAPACITY_PLAN_HASH_H_
