#include "coordinator/plan/rate_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace surge::coordinator {
namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

std::string Num(double v) { return absl::StrFormat("%g", v); }

// Bisection for the first t in [lo, hi] with f(t) >= y, f non-decreasing;
// runs until lo and hi are adjacent doubles.
template <typename F>
double Bisect(const F& f, double y, double lo, double hi) {
  if (f(lo) >= y) return lo;
  if (f(hi) < y) return hi;
  for (int i = 0; i < 2000; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (!(mid > lo && mid < hi)) break;
    if (f(mid) >= y) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

class ConstantProfile : public RateProfile {
 public:
  ConstantProfile(double rate_rps, double duration_s) : rate_(rate_rps), d_(duration_s) {}
  double RateRps(double) const override { return rate_; }
  double CountAt(double t) const override { return rate_ * std::clamp(t, 0.0, d_); }
  double TimeAtCount(double s) const override {
    if (!(rate_ > 0)) return s > 0 ? d_ : 0;
    return std::clamp(s / rate_, 0.0, d_);
  }
  double DurationS() const override { return d_; }
  std::string Title() const override {
    return absl::StrCat(Num(rate_), " RPS for ", Num(d_), " s");
  }
  std::string ShortTitle() const override { return absl::StrCat(Num(rate_), " RPS"); }
  std::string Formula() const override { return absl::StrCat("λ(t) = ", Num(rate_)); }
  double PeakRateRps() const override { return rate_; }

 private:
  double rate_, d_;
};

class RampProfile : public RateProfile {
 public:
  RampProfile(bool exponential, double a, double b, double d)
      : exp_(exponential && a != b), a_(a), b_(b), d_(d), log_k_(exp_ ? std::log(b / a) : 0) {}
  double RateRps(double t) const override {
    const double p = std::clamp(t, 0.0, d_) / d_;
    return exp_ ? a_ * std::exp(log_k_ * p) : a_ + (b_ - a_) * p;
  }
  double CountAt(double t) const override {
    const double u = std::clamp(t, 0.0, d_);
    if (exp_) return a_ * d_ / log_k_ * std::expm1(log_k_ * u / d_);
    return a_ * u + (b_ - a_) * u * u / (2 * d_);
  }
  double TimeAtCount(double s) const override {
    if (!(s > 0)) return 0;
    double u;
    if (exp_) {
      u = d_ * std::log1p(s * log_k_ / (a_ * d_)) / log_k_;
    } else {
      // Root of (b−a)/(2D)·u² + a·u − s = 0 in the cancellation-free form.
      u = 2 * s / (a_ + std::sqrt(a_ * a_ + 2 * (b_ - a_) * s / d_));
    }
    return std::clamp(u, 0.0, d_);
  }
  double DurationS() const override { return d_; }
  std::string Title() const override {
    return absl::StrCat(exp_ ? "Exponential" : "Linear", " ramp ", Num(a_), "→", Num(b_),
                        " RPS over ", Num(d_), " s");
  }
  std::string ShortTitle() const override {
    return absl::StrCat(exp_ ? "exp ramp " : "ramp ", Num(a_), "→", Num(b_), " RPS");
  }
  std::string Formula() const override {
    return exp_
               ? absl::StrCat("λ(t) = ", Num(a_), "·(", Num(b_), "/", Num(a_), ")^(t/", Num(d_),
                              ")")
               : absl::StrCat("λ(t) = ", Num(a_), " + (", Num(b_), " − ", Num(a_), ")·t/", Num(d_));
  }
  double PeakRateRps() const override { return std::max(a_, b_); }

 private:
  bool exp_;
  double a_, b_, d_, log_k_;
};

class CosineProfile : public RateProfile {
 public:
  CosineProfile(bool diurnal, double mean, double amp, double period, double peak, double d)
      : diurnal_(diurnal), mean_(mean), amp_(amp), period_(period), peak_(peak), d_(d) {}
  double RateRps(double t) const override {
    return std::max(0.0, mean_ + amp_ * std::cos(kTwoPi * (t - peak_) / period_));
  }
  double CountAt(double t) const override {
    const double u = std::clamp(t, 0.0, d_);
    const double k = amp_ * period_ / kTwoPi;
    return std::max(0.0, mean_ * u + k * (std::sin(kTwoPi * (u - peak_) / period_) -
                                          std::sin(kTwoPi * (-peak_) / period_)));
  }
  double TimeAtCount(double s) const override {
    return Bisect([this](double t) { return CountAt(t); }, s, 0.0, d_);
  }
  double DurationS() const override { return d_; }
  std::string Title() const override {
    if (diurnal_) {
      return absl::StrCat("Diurnal ", Num(mean_ - amp_), "–", Num(mean_ + amp_), " RPS (period ",
                          Num(period_), " s, peak at ", Num(peak_), " s) for ", Num(d_), " s");
    }
    return absl::StrCat("Sine ", Num(mean_), " ± ", Num(amp_), " RPS (period ", Num(period_),
                        " s) for ", Num(d_), " s");
  }
  std::string ShortTitle() const override {
    return diurnal_ ? absl::StrCat("diurnal ", Num(mean_ - amp_), "–", Num(mean_ + amp_), " RPS")
                    : absl::StrCat("sine ", Num(mean_), "±", Num(amp_), " RPS");
  }
  std::string Formula() const override {
    return absl::StrCat("λ(t) = ", Num(mean_), " + ", Num(amp_), "·cos(2π(t − ", Num(peak_), ")/",
                        Num(period_), ")");
  }
  double PeakRateRps() const override {
    // The maximum on [0, D]: a crest inside, else an end.
    double peak = std::max(RateRps(0), RateRps(d_));
    const double first = peak_ - std::floor(peak_ / period_) * period_;
    if (first <= d_) peak = mean_ + amp_;
    return peak;
  }

 private:
  bool diurnal_;
  double mean_, amp_, period_, peak_, d_;
};

class StagedProfile : public RateProfile {
 public:
  explicit StagedProfile(std::vector<std::unique_ptr<RateProfile>> stages)
      : stages_(std::move(stages)) {
    double t = 0, s = 0;
    for (const auto& st : stages_) {
      start_t_.push_back(t);
      start_count_.push_back(s);
      t += st->DurationS();
      s += st->TotalCount();
    }
    d_ = t;
    total_ = s;
  }
  // Left-continuous: t on (start_k, end_k] is stage k (stage 0 at t = 0).
  size_t LeftStage(double t) const {
    size_t k = std::lower_bound(start_t_.begin(), start_t_.end(), t) - start_t_.begin();
    return k == 0 ? 0 : k - 1;
  }
  size_t StageAt(double t) const override {
    size_t k = std::upper_bound(start_t_.begin(), start_t_.end(), t) - start_t_.begin();
    k = k == 0 ? 0 : k - 1;
    // Zero-length remainders at the end: the last stage.
    return std::min(k, stages_.size() - 1);
  }
  double RateRps(double t) const override {
    const size_t k = LeftStage(t);
    return stages_[k]->RateRps(t - start_t_[k]);
  }
  double CountAt(double t) const override {
    if (t >= d_) return total_;
    const size_t k = StageAt(std::max(t, 0.0));
    return start_count_[k] + stages_[k]->CountAt(t - start_t_[k]);
  }
  double TimeAtCount(double s) const override {
    if (!(s > 0)) return 0;
    if (s >= total_) return d_;
    // The first stage whose count range reaches s (a pause has an empty range).
    size_t k = std::lower_bound(start_count_.begin(), start_count_.end(), s) - start_count_.begin();
    k = k == 0 ? 0 : k - 1;
    return start_t_[k] + stages_[k]->TimeAtCount(s - start_count_[k]);
  }
  double DurationS() const override { return d_; }
  std::string Title() const override {
    if (stages_.size() == 1) return stages_[0]->Title();
    std::vector<std::string> parts;
    for (const auto& st : stages_) parts.push_back(st->Title());
    return absl::StrCat(stages_.size(), " stages: ", absl::StrJoin(parts, " → "));
  }
  std::string ShortTitle() const override {
    if (stages_.size() > 3) return absl::StrCat(stages_.size(), " stages");
    std::vector<std::string> parts;
    for (const auto& st : stages_) parts.push_back(st->ShortTitle());
    return absl::StrJoin(parts, " → ");
  }
  std::string Formula() const override {
    std::vector<std::string> parts;
    for (size_t k = 0; k < stages_.size(); ++k) {
      parts.push_back(absl::StrCat("stage ", k + 1, " from ", Num(start_t_[k]),
                                   " s: ", stages_[k]->Formula(), " (t from the stage start)"));
    }
    return absl::StrJoin(parts, "; ");
  }
  std::vector<double> Breakpoints() const override {
    std::vector<double> out;
    for (size_t k = 0; k < stages_.size(); ++k) {
      if (k > 0) out.push_back(start_t_[k]);
      for (double b : stages_[k]->Breakpoints()) out.push_back(start_t_[k] + b);
    }
    return out;
  }
  double PeakRateRps() const override {
    double peak = 0;
    for (const auto& st : stages_) peak = std::max(peak, st->PeakRateRps());
    return peak;
  }

 private:
  std::vector<std::unique_ptr<RateProfile>> stages_;
  std::vector<double> start_t_, start_count_;
  double d_ = 0, total_ = 0;
};

class SpikeOverlay : public RateProfile {
 public:
  SpikeOverlay(std::unique_ptr<RateProfile> base, std::vector<Spike> spikes)
      : base_(std::move(base)) {
    const double d = base_->DurationS();
    // Pieces [edge_j, edge_{j+1}] with one factor each; Λ' at each edge.
    edges_.push_back(0);
    factors_.push_back(1);
    for (const Spike& sp : spikes) {
      const double a = std::clamp(sp.at_s, 0.0, d);
      const double b = std::clamp(sp.at_s + sp.duration_s, 0.0, d);
      if (!(b > a)) continue;
      if (a > edges_.back()) {
        edges_.push_back(a);
        factors_.push_back(sp.rate_multiplier);
      } else {
        factors_.back() = sp.rate_multiplier;  // a spike from t = 0
      }
      edges_.push_back(b);
      factors_.push_back(1);
      spikes_.push_back(sp);
    }
    if (edges_.back() >= d && edges_.size() > 1) {
      edges_.pop_back();
      factors_.pop_back();
    }
    double s = 0;
    for (size_t j = 0; j < edges_.size(); ++j) {
      counts_.push_back(s);
      const double end = j + 1 < edges_.size() ? edges_[j + 1] : d;
      s += factors_[j] * (base_->CountAt(end) - base_->CountAt(edges_[j]));
    }
    total_ = s;
  }
  double RateRps(double t) const override {
    size_t j = std::lower_bound(edges_.begin(), edges_.end(), t) - edges_.begin();
    j = j == 0 ? 0 : j - 1;
    return factors_[j] * base_->RateRps(t);
  }
  double CountAt(double t) const override {
    const double d = DurationS();
    if (t >= d) return total_;
    size_t j = std::upper_bound(edges_.begin(), edges_.end(), t) - edges_.begin();
    j = j == 0 ? 0 : j - 1;
    return counts_[j] + factors_[j] * (base_->CountAt(t) - base_->CountAt(edges_[j]));
  }
  double TimeAtCount(double s) const override {
    if (!(s > 0)) return 0;
    if (s >= total_) return DurationS();
    size_t j = std::lower_bound(counts_.begin(), counts_.end(), s) - counts_.begin();
    j = j == 0 ? 0 : j - 1;
    // Λ'(t) = C_j + f_j·(Λ(t) − Λ(e_j)) on piece j: Λ(t) = Λ(e_j) + (s − C_j)/f_j.
    if (!(factors_[j] > 0)) return edges_[j];
    return base_->TimeAtCount(base_->CountAt(edges_[j]) + (s - counts_[j]) / factors_[j]);
  }
  double DurationS() const override { return base_->DurationS(); }
  std::string Title() const override {
    std::vector<std::string> parts;
    for (const Spike& sp : spikes_) {
      parts.push_back(absl::StrCat("×", Num(sp.rate_multiplier), " at ", Num(sp.at_s), "–",
                                   Num(sp.at_s + sp.duration_s), " s"));
    }
    return absl::StrCat(base_->Title(), " + ", spikes_.size() == 1 ? "spike " : "spikes ",
                        absl::StrJoin(parts, ", "));
  }
  std::string ShortTitle() const override {
    if (spikes_.size() == 1) {
      return absl::StrCat(base_->ShortTitle(), " + spike ×", Num(spikes_[0].rate_multiplier));
    }
    return absl::StrCat(base_->ShortTitle(), " + ", spikes_.size(), " spikes");
  }
  std::string Formula() const override {
    return absl::StrCat(base_->Formula(), "; times the spike factor inside each spike");
  }
  std::vector<double> Breakpoints() const override {
    std::vector<double> out = base_->Breakpoints();
    for (size_t j = 1; j < edges_.size(); ++j) out.push_back(edges_[j]);
    for (const Spike& sp : spikes_) {
      if (sp.at_s + sp.duration_s < DurationS()) out.push_back(sp.at_s + sp.duration_s);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  size_t StageAt(double t) const override { return base_->StageAt(t); }
  double PeakRateRps() const override {
    double peak = 0;
    for (const RatePoint& p : Curve(4096)) peak = std::max(peak, p.rate_rps);
    return peak;
  }

 private:
  std::unique_ptr<RateProfile> base_;
  std::vector<Spike> spikes_;
  std::vector<double> edges_, factors_, counts_;
  double total_ = 0;
};

}  // namespace

double RateProfile::TimeAtCount(double count) const {
  return Bisect([this](double t) { return CountAt(t); }, count, 0.0, DurationS());
}

double RateProfile::PeakRateRps() const {
  double peak = 0;
  for (const RatePoint& p : Curve(4096)) peak = std::max(peak, p.rate_rps);
  return peak;
}

std::vector<RatePoint> RateProfile::Curve(size_t points) const {
  const double d = DurationS();
  std::vector<double> ts;
  const size_t n = std::max<size_t>(points, 2);
  for (size_t i = 0; i < n; ++i) ts.push_back(d * static_cast<double>(i) / (n - 1));
  const std::vector<double> breaks = Breakpoints();
  std::vector<RatePoint> out;
  size_t b = 0;
  for (double t : ts) {
    // Both sides of every breakpoint before t: λ(b) (left) and just after.
    while (b < breaks.size() && breaks[b] <= t) {
      const double e = breaks[b++];
      out.push_back({e, RateRps(e)});
      out.push_back({e, RateRps(std::nextafter(e, d))});
    }
    out.push_back({t, RateRps(t)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RatePoint& x, const RatePoint& y) { return x.t_s < y.t_s; });
  return out;
}

std::unique_ptr<RateProfile> MakeConstantProfile(double rate_rps, double duration_s) {
  return std::make_unique<ConstantProfile>(rate_rps, duration_s);
}
std::unique_ptr<RateProfile> MakeRampProfile(bool exponential, double start_rps, double end_rps,
                                             double duration_s) {
  return std::make_unique<RampProfile>(exponential, start_rps, end_rps, duration_s);
}
std::unique_ptr<RateProfile> MakeCosineProfile(bool diurnal, double mean_rps, double amplitude_rps,
                                               double period_s, double peak_at_s,
                                               double duration_s) {
  return std::make_unique<CosineProfile>(diurnal, mean_rps, amplitude_rps, period_s, peak_at_s,
                                         duration_s);
}
std::unique_ptr<RateProfile> MakeStagedProfile(std::vector<std::unique_ptr<RateProfile>> stages) {
  return std::make_unique<StagedProfile>(std::move(stages));
}
std::unique_ptr<RateProfile> MakeSpikeOverlay(std::unique_ptr<RateProfile> base,
                                              std::vector<Spike> spikes) {
  return std::make_unique<SpikeOverlay>(std::move(base), std::move(spikes));
}

}  // namespace surge::coordinator
