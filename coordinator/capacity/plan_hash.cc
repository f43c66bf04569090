#include "coordinator/capacity/plan_hash.h"

#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {

uint64_t Fnv1a64(std::string_view bytes, uint64_t hash) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kPrime;
  }
  return hash;
}

std::string PlanHashHex(uint64_t hash) { return absl::StrFormat("%016x", hash); }

absl::StatusOr<std::string> PlanFileHash(const std::filesystem::path& plan_csv) {
  std::ifstream in(plan_csv, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(plan_csv.string(), ": cannot be read"));
  std::vector<char> piece(1 << 16);
  uint64_t hash = kFnv1a64Basis;
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    hash = Fnv1a64(std::string_view(piece.data(), static_cast<size_t>(in.gcount())), hash);
  }
  if (in.bad()) return absl::InternalError(absl::StrCat(plan_csv.string(), ": read error"));
  return PlanHashHex(hash);
}

}  // namespace surge::coordinator
