// Synthetic length draws (R-MET-3): each distribution's sample mean and
// standard deviation against its exact values, with tolerances from the
// number of draws; determinism and independence from the schedule.
#include "coordinator/dataset/length_distribution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "coordinator/dataset/payload_source.h"
#include "coordinator/plan/arrival_schedule.h"

namespace surge::coordinator {
namespace {

constexpr uint64_t kDraws = 100000;
// |sample − exact| must be below kZ standard errors (p ≈ 6e-7 two-sided for
// a normal statistic); the seed is fixed, so the test is deterministic.
constexpr double kZ = 5.0;

struct Moments {
  double mean = 0, variance = 0, fourth = 0;  // fourth central moment
};

// Exact moments of a distribution over 1..pmf.size()-1 (pmf[k] = weight of k).
Moments ExactMoments(const std::vector<double>& pmf) {
  double total = 0;
  for (double w : pmf) total += w;
  Moments m;
  for (size_t k = 0; k < pmf.size(); ++k) m.mean += static_cast<double>(k) * pmf[k] / total;
  for (size_t k = 0; k < pmf.size(); ++k) {
    const double d = static_cast<double>(k) - m.mean;
    m.variance += d * d * pmf[k] / total;
    m.fourth += d * d * d * d * pmf[k] / total;
  }
  return m;
}

struct Sample {
  double mean = 0, variance = 0;
  uint32_t min = UINT32_MAX, max = 0;
};

Sample Summarize(const std::vector<uint32_t>& xs) {
  Sample s;
  for (uint32_t x : xs) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= static_cast<double>(xs.size());
  for (uint32_t x : xs) s.variance += (x - s.mean) * (x - s.mean);
  s.variance /= static_cast<double>(xs.size() - 1);
  return s;
}

// Mean within kZ·σ/√N; variance within kZ·√((μ4 − σ⁴)/N) (its standard error).
void ExpectMatches(const Sample& s, const Moments& m, uint64_t n) {
  const double mean_se = std::sqrt(m.variance / static_cast<double>(n));
  EXPECT_NEAR(s.mean, m.mean, kZ * mean_se);
  const double var_se = std::sqrt((m.fourth - m.variance * m.variance) / static_cast<double>(n));
  EXPECT_NEAR(s.variance, m.variance, kZ * var_se);
  EXPECT_NEAR(std::sqrt(s.variance), std::sqrt(m.variance),
              kZ * var_se / (2 * std::sqrt(m.variance)) + 1e-12);
}

std::vector<uint32_t> Draw(uint32_t len, const LengthDistParams& params, uint64_t n,
                           uint64_t seed = 7) {
  const LengthSampler sampler(len, params);
  boost::random::mt19937_64 engine(LengthEngineSeed(seed));
  std::vector<uint32_t> out(n);
  for (auto& x : out) x = sampler.Draw(engine);
  return out;
}

TEST(LengthDistributionTest, ParsesTheFourNames) {
  EXPECT_EQ(*ParseLengthDist(""), LengthDist::kFixed);
  EXPECT_EQ(*ParseLengthDist("fixed"), LengthDist::kFixed);
  EXPECT_EQ(*ParseLengthDist("uniform"), LengthDist::kUniform);
  EXPECT_EQ(*ParseLengthDist("gaussian"), LengthDist::kGaussian);
  EXPECT_EQ(*ParseLengthDist("zipf"), LengthDist::kZipf);
  EXPECT_FALSE(ParseLengthDist("normal").ok());
}

TEST(LengthDistributionTest, FixedIsTheLength) {
  const Sample s = Summarize(Draw(1024, {}, 1000));
  EXPECT_EQ(s.min, 1024u);
  EXPECT_EQ(s.max, 1024u);
}

TEST(LengthDistributionTest, UniformMatchesItsExactMomentsWithinTheRange) {
  LengthDistParams p;
  p.dist = LengthDist::kUniform;
  p.range_ratio = 0.25;
  const Sample s = Summarize(Draw(1000, p, kDraws));
  EXPECT_EQ(s.min, 750u);  // 100,000 draws over 501 values hit both ends
  EXPECT_EQ(s.max, 1250u);
  std::vector<double> pmf(1251, 0.0);
  for (size_t k = 750; k <= 1250; ++k) pmf[k] = 1;
  ExpectMatches(s, ExactMoments(pmf), kDraws);
}

TEST(LengthDistributionTest, UniformBoundsAreInsideTheInterval) {
  LengthDistParams p;
  p.dist = LengthDist::kUniform;
  p.range_ratio = 0.07;  // 100·0.93 = 93.00000000000001 in doubles
  const Sample s = Summarize(Draw(100, p, 20000));
  EXPECT_EQ(s.min, 93u);
  EXPECT_EQ(s.max, 107u);
  p.range_ratio = 0.999;  // the lower end stays at 1 token
  EXPECT_GE(Summarize(Draw(3, p, 1000)).min, 1u);
}

TEST(LengthDistributionTest, GaussianMatchesMeanAndStddev) {
  LengthDistParams p;
  p.dist = LengthDist::kGaussian;
  p.stddev = 100;
  const Sample s = Summarize(Draw(1000, p, kDraws));
  // round(N(1000, 100)): mean 1000, variance σ² + 1/12 (rounding), μ4 ≈ 3σ⁴;
  // truncation at 1 is 10 σ away.
  Moments m;
  m.mean = 1000;
  m.variance = 100.0 * 100.0 + 1.0 / 12.0;
  m.fourth = 3 * m.variance * m.variance;
  ExpectMatches(s, m, kDraws);
}

TEST(LengthDistributionTest, GaussianIsTruncatedToAtLeastOneToken) {
  LengthDistParams p;
  p.dist = LengthDist::kGaussian;
  p.stddev = 10;
  const Sample s = Summarize(Draw(5, p, kDraws));
  EXPECT_EQ(s.min, 1u);
  // Exact law: P(k) ∝ Φ((k+½−5)/10) − Φ((k−½−5)/10) for k ≥ 1.
  auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  std::vector<double> pmf(200, 0.0);
  for (size_t k = 1; k < pmf.size(); ++k) {
    pmf[k] = phi((k + 0.5 - 5) / 10) - phi((k - 0.5 - 5) / 10);
  }
  const Moments m = ExactMoments(pmf);
  EXPECT_GT(m.mean, 10.0);  // truncation moves the mean far above 5
  ExpectMatches(s, m, kDraws);
}

TEST(LengthDistributionTest, ZipfMatchesItsExactMomentsOverOneToTwiceTheLength) {
  for (double exponent : {0.5, 1.0, 1.5}) {
    SCOPED_TRACE(exponent);
    LengthDistParams p;
    p.dist = LengthDist::kZipf;
    p.zipf_s = exponent;
    const Sample s = Summarize(Draw(500, p, kDraws));
    EXPECT_GE(s.min, 1u);
    EXPECT_LE(s.max, 1000u);
    std::vector<double> pmf(1001, 0.0);
    for (size_t k = 1; k <= 1000; ++k) pmf[k] = std::pow(static_cast<double>(k), -exponent);
    ExpectMatches(s, ExactMoments(pmf), kDraws);
  }
  // The documented example: s = 1, len = 1024 has a mean of about 250.
  LengthDistParams p;
  p.dist = LengthDist::kZipf;
  std::vector<double> pmf(2049, 0.0);
  for (size_t k = 1; k <= 2048; ++k) pmf[k] = 1.0 / static_cast<double>(k);
  EXPECT_NEAR(ExactMoments(pmf).mean, 250, 5);
  EXPECT_NEAR(Summarize(Draw(1024, p, kDraws)).mean, ExactMoments(pmf).mean, 10);
}

TEST(LengthDistributionTest, SyntheticSourceDrawsPerRequestDeterministically) {
  surge::v1::DatasetConfig d;
  d.set_dataset_name("random");
  d.set_random_input_len(1000);
  d.set_random_output_len(200);
  d.set_random_len_dist("uniform");
  d.set_random_range_ratio(0.5);
  auto a = MakePayloadSource(d, kDraws, 42);
  auto b = MakePayloadSource(d, kDraws, 42);
  auto c = MakePayloadSource(d, kDraws, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::vector<uint32_t> in, out;
  size_t differ = 0;
  for (uint64_t i = 0; i < kDraws; ++i) {
    const Payload pa = (*a)->At(i);
    const Payload pb = (*b)->At(i);
    EXPECT_EQ(pa.input_tokens, pb.input_tokens);
    EXPECT_EQ(pa.max_tokens, pb.max_tokens);
    differ += pa.input_tokens != (*c)->At(i).input_tokens;
    in.push_back(pa.input_tokens);
    out.push_back(pa.max_tokens);
  }
  EXPECT_GT(differ, kDraws / 2);  // another seed, other lengths
  const Sample si = Summarize(in);
  const Sample so = Summarize(out);
  EXPECT_EQ(si.min, 500u);
  EXPECT_EQ(si.max, 1500u);
  EXPECT_EQ(so.min, 100u);
  EXPECT_EQ(so.max, 300u);
  std::vector<double> pmf_in(1501, 0.0), pmf_out(301, 0.0);
  for (size_t k = 500; k <= 1500; ++k) pmf_in[k] = 1;
  for (size_t k = 100; k <= 300; ++k) pmf_out[k] = 1;
  ExpectMatches(si, ExactMoments(pmf_in), kDraws);
  ExpectMatches(so, ExactMoments(pmf_out), kDraws);
}

TEST(LengthDistributionTest, GoldenFirstDrawsPinTheStream) {
  // Boost.Random's engine and distributions are fixed code: these values are
  // the same with every compiler. A change here changes every user's lengths.
  surge::v1::DatasetConfig d;
  d.set_dataset_name("synthetic");
  d.set_random_input_len(1024);
  d.set_random_output_len(128);
  d.set_random_len_dist("uniform");
  d.set_random_range_ratio(0.5);
  auto source = MakePayloadSource(d, 4, 0);
  ASSERT_TRUE(source.ok());
  std::vector<uint32_t> got;
  for (uint64_t i = 0; i < 4; ++i) {
    got.push_back((*source)->At(i).input_tokens);
    got.push_back((*source)->At(i).max_tokens);
  }
  const std::vector<uint32_t> golden = {1215, 121, 1014, 178, 1238, 159, 732, 115};
  EXPECT_EQ(got, golden);
}

TEST(LengthDistributionTest, FixedIsTheDefaultAndTheScheduleIgnoresLengths) {
  surge::v1::DatasetConfig d;
  d.set_dataset_name("synthetic");
  d.set_random_input_len(64);
  d.set_random_output_len(8);
  auto fixed = MakePayloadSource(d, 10, 3);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ((*fixed)->At(9).input_tokens, 64u);
  EXPECT_EQ((*fixed)->At(9).max_tokens, 8u);
  // The schedule has its own engine: drawing lengths with the same run seed
  // leaves the plan unchanged.
  ResolvedTraffic t;
  t.request_rate_rps = 10;
  t.target_rate_rps = 10;
  t.burstiness = 0.5;
  auto before = BuildArrivalSchedule(t, 100, 3);
  d.set_random_len_dist("gaussian");
  d.set_random_len_stddev(20);
  ASSERT_TRUE(MakePayloadSource(d, 100, 3).ok());
  auto after = BuildArrivalSchedule(t, 100, 3);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(before->offset_s, after->offset_s);
  EXPECT_NE(LengthEngineSeed(3), 3u);
}

}  // namespace
}  // namespace surge::coordinator
