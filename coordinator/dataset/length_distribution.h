// Per-request token lengths of the synthetic dataset (R-MET-3): fixed,
// uniform, gaussian or zipf around a configured length. Draws come from a
// Boost.Random engine the caller owns, so the stream is the same on every
// platform and compiler (as R-RNG asks of the schedule).
#ifndef SURGE_COORDINATOR_DATASET_LENGTH_DISTRIBUTION_H_
#define SURGE_COORDINATOR_DATASET_LENGTH_DISTRIBUTION_H_

#include <boost/random/mersenne_twister.hpp>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// Largest length a draw can give, tokens (also the trace readers' bound).
inline constexpr uint32_t kMaxDrawnTokens = 1u << 24;

enum class LengthDist { kFixed, kUniform, kGaussian, kZipf };

// "fixed" (or empty), "uniform", "gaussian", "zipf". Errors: INVALID_ARGUMENT.
absl::StatusOr<LengthDist> ParseLengthDist(const std::string& name);

struct LengthDistParams {
  LengthDist dist = LengthDist::kFixed;
  // uniform: r in [0, 1).
  double range_ratio = 0;
  // gaussian: standard deviation, tokens, >= 0.
  double stddev = 0;
  // zipf: exponent s > 0.
  double zipf_s = 1;
};

// The length distribution the dataset options name: random_len_dist and
// its parameter (random_range_ratio, random_len_stddev, random_zipf_s,
// default 1). Errors: ParseLengthDist's.
absl::StatusOr<LengthDistParams> LengthDistParamsOf(const surge::v1::DatasetConfig& dataset);

// Draws lengths around `len` (>= 1):
// - fixed: len.
// - uniform: an integer uniform over [ceil(len(1-r)), floor(len(1+r))]
//   (at least 1), so its mean is len.
// - gaussian: round(N(len, stddev)), redrawn while below 1 (a normal
//   truncated to >= 1 token), capped at kMaxDrawnTokens.
// - zipf: k in 1..2·len with P(k) ∝ k^-s, by Hörmann and Derflinger's
//   rejection-inversion (no table, O(1) per draw). Its mean is far below len
//   for s >= 1 (e.g. s = 1, len = 1024: about 250): a heavy-tailed mix of
//   many short and a few long requests, not a spread around len.
// Immutable; Draw is const and uses only the engine passed in.
class LengthSampler {
 public:
  LengthSampler(uint32_t len, const LengthDistParams& params);
  uint32_t Draw(boost::random::mt19937_64& engine) const;

 private:
  uint32_t DrawZipf(boost::random::mt19937_64& engine) const;
  double H(double x) const;
  double HIntegral(double x) const;
  double HIntegralInverse(double x) const;

  uint32_t len_;
  LengthDistParams params_;
  uint64_t lo_ = 0, hi_ = 0;  // uniform bounds
  // Zipf over 1..n_ with exponent s_ (rejection-inversion constants).
  double n_ = 0, s_ = 1, h_integral_x1_ = 0, h_integral_n_ = 0, squeeze_ = 0;
};

// Seed of the length engine for a run seed: a SplitMix64 mix of the seed, so
// that the lengths' stream is not the schedule's stream (mt19937_64(seed))
// and the schedule does not change when the length options do.
uint64_t LengthEngineSeed(uint64_t run_seed);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_LENGTH_DISTRIBUTION_H_
