#include "coordinator/dataset/length_distribution.h"

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace surge::coordinator {
namespace {

// A double uniform in [0, 1) from the top 53 bits of one engine output:
// fixed arithmetic, the same everywhere.
double Uniform01(boost::random::mt19937_64& engine) {
  return static_cast<double>(engine() >> 11) * (1.0 / 9007199254740992.0);
}

// log1p(x)/x and expm1(x)/x, with their series near 0 (rejection-inversion).
double Helper1(double x) {
  if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
  return 1.0 - x * (0.5 - x * (1.0 / 3.0 - x * 0.25));
}
double Helper2(double x) {
  if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
  return 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + x * 0.25));
}

}  // namespace

absl::StatusOr<LengthDist> ParseLengthDist(const std::string& name) {
  if (name.empty() || name == "fixed") return LengthDist::kFixed;
  if (name == "uniform") return LengthDist::kUniform;
  if (name == "gaussian") return LengthDist::kGaussian;
  if (name == "zipf") return LengthDist::kZipf;
  return absl::InvalidArgumentError(
      absl::StrCat("random_len_dist = \"", name, "\": must be fixed, uniform, gaussian or zipf"));
}

absl::StatusOr<LengthDistParams> LengthDistParamsOf(const surge::v1::DatasetConfig& dataset) {
  absl::StatusOr<LengthDist> dist = ParseLengthDist(dataset.random_len_dist());
  if (!dist.ok()) return dist.status();
  LengthDistParams params;
  params.dist = *dist;
  params.range_ratio = dataset.random_range_ratio();
  params.stddev = dataset.random_len_stddev();
  params.zipf_s = dataset.has_random_zipf_s() ? dataset.random_zipf_s() : 1.0;
  return params;
}

LengthSampler::LengthSampler(uint32_t len, const LengthDistParams& params)
    : len_(std::max<uint32_t>(len, 1)), params_(params) {
  if (params_.dist == LengthDist::kUniform) {
    // A small tolerance keeps e.g. 100·(1−0.07) = 93.00000000000001 at 93.
    const double low = static_cast<double>(len_) * (1.0 - params_.range_ratio);
    const double high = static_cast<double>(len_) * (1.0 + params_.range_ratio);
    lo_ = static_cast<uint64_t>(std::max(1.0, std::ceil(low - 1e-9)));
    hi_ = std::max<uint64_t>(lo_, static_cast<uint64_t>(std::floor(high + 1e-9)));
    hi_ = std::min<uint64_t>(hi_, kMaxDrawnTokens);
    lo_ = std::min(lo_, hi_);
  }
  if (params_.dist == LengthDist::kZipf) {
    n_ = 2.0 * static_cast<double>(len_);
    s_ = params_.zipf_s;
    h_integral_x1_ = HIntegral(1.5) - 1.0;
    h_integral_n_ = HIntegral(n_ + 0.5);
    squeeze_ = 2.0 - HIntegralInverse(HIntegral(2.5) - H(2.0));
  }
}

uint32_t LengthSampler::Draw(boost::random::mt19937_64& engine) const {
  switch (params_.dist) {
    case LengthDist::kFixed:
      return len_;
    case LengthDist::kUniform:
      return static_cast<uint32_t>(
          boost::random::uniform_int_distribution<uint64_t>(lo_, hi_)(engine));
    case LengthDist::kGaussian: {
      if (!(params_.stddev > 0)) return len_;
      boost::random::normal_distribution<double> normal(static_cast<double>(len_), params_.stddev);
      // Truncated to >= 1 token: redraw below it. The mean is >= 1, so at
      // least about half of the draws are kept; the bound only guards
      // against a broken engine.
      for (int attempt = 0; attempt < 10000; ++attempt) {
        const double x = std::round(normal(engine));
        if (x >= 1) return static_cast<uint32_t>(std::min<double>(x, kMaxDrawnTokens));
      }
      return 1;
    }
    case LengthDist::kZipf:
      return DrawZipf(engine);
  }
  return len_;
}

// Rejection-inversion sampling of a bounded Zipf distribution (W. Hörmann,
// G. Derflinger, "Rejection-inversion to generate variates from monotone
// discrete distributions", ACM TOMACS 6(3), 1996), as Apache Commons Math's
// ZipfRejectionInversionSampler implements it.
uint32_t LengthSampler::DrawZipf(boost::random::mt19937_64& engine) const {
  while (true) {
    const double u = h_integral_n_ + Uniform01(engine) * (h_integral_x1_ - h_integral_n_);
    const double x = HIntegralInverse(u);
    double k = std::floor(x + 0.5);
    if (k < 1) {
      k = 1;
    } else if (k > n_) {
      k = n_;
    }
    if (k - x <= squeeze_ || u >= HIntegral(k + 0.5) - H(k)) {
      return static_cast<uint32_t>(std::min<double>(k, kMaxDrawnTokens));
    }
  }
}

double LengthSampler::H(double x) const { return std::exp(-s_ * std::log(x)); }

double LengthSampler::HIntegral(double x) const {
  const double log_x = std::log(x);
  return Helper2((1.0 - s_) * log_x) * log_x;
}

double LengthSampler::HIntegralInverse(double x) const {
  double t = x * (1.0 - s_);
  if (t < -1.0) t = -1.0;  // rounding can push it just below
  return std::exp(Helper1(t) * x);
}

uint64_t LengthEngineSeed(uint64_t run_seed) {
  // SplitMix64's finalizer of the seed plus a fixed odd constant ("lengths").
  uint64_t z = run_seed + 0x6c656e6774687321ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace surge::coordinator
