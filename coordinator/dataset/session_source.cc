#include "coordinator/dataset/session_source.h"

#include <algorithm>
#include <boost/random/exponential_distribution.hpp>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/split_mix.h"
#include "coordinator/dataset/file_datasets.h"
#include "coordinator/dataset/length_distribution.h"

namespace surge::coordinator {
namespace {

using Engine = boost::random::mt19937_64;

// How the think times of turns 1..n-1 are made.
class ThinkTimes {
 public:
  enum class Dist { kFixed, kExponential, kGamma };

  static absl::StatusOr<ThinkTimes> Of(const surge::v1::SessionConfig& s) {
    ThinkTimes t;
    const std::string& dist = s.think_time_dist();
    if (dist.empty()) {
      t.mean_s_ = s.has_think_time_s() ? s.think_time_s() : 0.0;
      if (!(t.mean_s_ >= 0) || !std::isfinite(t.mean_s_)) {
        return absl::InvalidArgumentError(
            absl::StrCat("think_time_s = ", t.mean_s_,
                         ": must be a number of seconds >= 0 (flag --think-time-s)"));
      }
      return t;
    }
    if (dist == "fixed") {
      t.dist_ = Dist::kFixed;
    } else if (dist == "exponential") {
      t.dist_ = Dist::kExponential;
    } else if (dist == "gamma") {
      t.dist_ = Dist::kGamma;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("think_time_dist = \"", dist,
                       "\": must be fixed, exponential or gamma (flag --think-time-dist)"));
    }
    t.mean_s_ = s.think_time_mean_s();
    if (!s.has_think_time_mean_s() || !(t.mean_s_ > 0) || !std::isfinite(t.mean_s_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("think_time_mean_s: think_time_dist \"", dist,
                       "\" needs a mean think time, s > 0 (flag --think-time-mean-s)"));
    }
    t.shape_ = s.has_think_time_burstiness() ? s.think_time_burstiness() : 1.0;
    if (!(t.shape_ > 0) || !std::isfinite(t.shape_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("think_time_burstiness = ", t.shape_,
                       ": must be a number > 0 (flag --think-time-burstiness)"));
    }
    return t;
  }

  // Fills think_ns of turns[1..], drawing from `engine` in turn order.
  void Draw(Engine& engine, std::vector<SessionTurnPayload>& turns) const {
    if (turns.size() < 2) return;
    switch (dist_) {
      case Dist::kFixed:
        for (size_t k = 1; k < turns.size(); ++k) turns[k].think_ns = ToNs(mean_s_);
        return;
      case Dist::kExponential: {
        boost::random::exponential_distribution<double> exponential(1.0 / mean_s_);
        for (size_t k = 1; k < turns.size(); ++k) turns[k].think_ns = ToNs(exponential(engine));
        return;
      }
      case Dist::kGamma: {
        boost::random::gamma_distribution<double> gamma(shape_, mean_s_ / shape_);
        for (size_t k = 1; k < turns.size(); ++k) turns[k].think_ns = ToNs(gamma(engine));
        return;
      }
    }
  }

 private:
  // Seconds to whole ns, at most about 292 years.
  static int64_t ToNs(double s) {
    const double ns = std::round(s * 1e9);
    constexpr double kMaxNs = 9.2e18;
    return ns >= kMaxNs ? static_cast<int64_t>(kMaxNs) : static_cast<int64_t>(ns);
  }

  Dist dist_ = Dist::kFixed;
  double mean_s_ = 0;
  double shape_ = 1;
};

// The parts every source shares: name, warnings, think times and the seed.
class SessionSourceBase : public SessionSource {
 public:
  SessionSourceBase(std::string name, std::vector<std::string> warnings, ThinkTimes think,
                    uint64_t num_sessions, uint64_t seed)
      : name_(std::move(name)),
        warnings_(std::move(warnings)),
        think_(think),
        num_sessions_(num_sessions),
        seed_(seed) {}
  uint64_t num_sessions() const override { return num_sessions_; }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 protected:
  // Session `session`'s think times into `turns`.
  void AddThinkTimes(uint64_t session, std::vector<SessionTurnPayload>& turns) const {
    Engine engine(SessionEngineSeed(seed_, kThinkStream, session));
    think_.Draw(engine, turns);
  }
  uint64_t seed() const { return seed_; }

 private:
  std::string name_;
  std::vector<std::string> warnings_;
  ThinkTimes think_;
  uint64_t num_sessions_;
  uint64_t seed_;
};

// Synthetic sessions: lengths drawn on demand from each session's own
// engine; only a MIN-MAX turn count is kept per session (2 bytes).
class SyntheticSessionSource final : public SessionSourceBase {
 public:
  SyntheticSessionSource(const surge::v1::DatasetConfig& d, const LengthDistParams& params,
                         SessionTurnsRange range, ThinkTimes think, uint64_t num_sessions,
                         uint64_t seed)
      : SessionSourceBase("synthetic", {}, think, num_sessions, seed),
        input_(d.random_input_len(), params),
        output_(d.random_output_len(), params),
        fixed_turns_(range.min_turns) {
    if (range.min_turns == range.max_turns) return;
    Engine engine(SplitMix64(seed ^ kTurnCountStream));
    boost::random::uniform_int_distribution<uint32_t> count(range.min_turns, range.max_turns);
    turns_.resize(num_sessions);
    for (uint64_t i = 0; i < num_sessions; ++i) turns_[i] = static_cast<uint16_t>(count(engine));
  }
  uint32_t TurnsOf(uint64_t session) const override {
    return turns_.empty() ? fixed_turns_ : turns_[session];
  }
  std::vector<SessionTurnPayload> At(uint64_t session) const override {
    const uint32_t n = TurnsOf(session);
    std::vector<SessionTurnPayload> turns(n);
    Engine lengths(SessionEngineSeed(seed(), kLengthStream, session));
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t input = input_.Draw(lengths);
      const uint32_t output = output_.Draw(lengths);
      turns[k].payload = Payload(input, output, PromptSeed(seed(), SessionTurnIndex(session, k)));
    }
    AddThinkTimes(session, turns);
    return turns;
  }

 private:
  LengthSampler input_, output_;
  uint32_t fixed_turns_;
  std::vector<uint16_t> turns_;  // MIN-MAX: each session's count
};

// A ShareGPT file's sessions: the conversations' turns, read once.
class ShareGptSessionSource final : public SessionSourceBase {
 public:
  ShareGptSessionSource(std::string name, SessionRows rows, ThinkTimes think, uint64_t num_sessions,
                        uint64_t seed)
      : SessionSourceBase(std::move(name), std::move(rows.warnings), think, num_sessions, seed),
        sessions_(std::move(rows.sessions)) {}
  uint32_t TurnsOf(uint64_t session) const override {
    return static_cast<uint32_t>(sessions_[session % sessions_.size()].size());
  }
  std::vector<SessionTurnPayload> At(uint64_t session) const override {
    const std::vector<Payload>& row = sessions_[session % sessions_.size()];
    std::vector<SessionTurnPayload> turns(row.size());
    for (size_t k = 0; k < row.size(); ++k) turns[k].payload = row[k];
    AddThinkTimes(session, turns);
    return turns;
  }

 private:
  std::vector<std::vector<Payload>> sessions_;
};

absl::StatusOr<std::unique_ptr<SessionSource>> MakeShareGptSessions(
    const surge::v1::DatasetConfig& dataset, const ThinkTimes& think, uint64_t num_sessions,
    uint64_t seed) {
  const std::string& path = dataset.dataset_path();
  if (absl::Status s = CheckDatasetFile(path); !s.ok()) return s;
  absl::StatusOr<SessionRows> rows =
      ReadShareGptSessions(path, num_sessions, dataset.random_output_len(), seed);
  if (!rows.ok()) return rows.status();
  const size_t n_rows = rows->sessions.size();
  if (n_rows < num_sessions) {
    rows->warnings.push_back(absl::StrCat(
        "dataset ", path, " has ", n_rows, " conversations with a human turn; ", num_sessions,
        " sessions were asked for, so its conversations are reused from the top (session i uses "
        "conversation i mod ",
        n_rows, ")"));
  }
  return std::unique_ptr<SessionSource>(new ShareGptSessionSource(
      std::filesystem::path(path).stem().string(), *std::move(rows), think, num_sessions, seed));
}

}  // namespace

uint64_t SessionEngineSeed(uint64_t run_seed, uint64_t stream, uint64_t session) {
  return SplitMix64(SplitMix64(run_seed ^ stream) + session);
}

absl::StatusOr<SessionTurnsRange> ParseSessionTurns(const std::string& text) {
  const std::string allowed =
      absl::StrCat("must be N or MIN-MAX, whole numbers with 1 <= MIN <= MAX <= ", kMaxSessionTurns,
                   " (e.g. 3 or 2-6)");
  SessionTurnsRange range;
  if (text.empty()) return range;
  const std::vector<std::string> parts = absl::StrSplit(text, '-');
  uint32_t lo = 0, hi = 0;
  if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &lo) ||
      !absl::SimpleAtoi(parts.back(), &hi)) {
    return absl::InvalidArgumentError(allowed);
  }
  // (SimpleAtoi takes a leading '+' and spaces: only digits are allowed.)
  for (const std::string& part : parts) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) {
      return absl::InvalidArgumentError(allowed);
    }
  }
  if (lo < 1 || lo > hi || hi > kMaxSessionTurns) return absl::InvalidArgumentError(allowed);
  range.min_turns = lo;
  range.max_turns = hi;
  return range;
}

absl::StatusOr<std::unique_ptr<SessionSource>> MakeSessionSource(
    const surge::v1::DatasetConfig& dataset, const surge::v1::SessionConfig& sessions,
    uint64_t num_sessions, uint64_t seed) {
  const std::string& name = dataset.dataset_name();
  absl::StatusOr<ThinkTimes> think = ThinkTimes::Of(sessions);
  if (!think.ok()) return think.status();
  if (name == "sharegpt") {
    if (!sessions.session_turns().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("session_turns = \"", sessions.session_turns(),
                       "\": a sharegpt file gives each session's turns; drop --session-turns"));
    }
    return MakeShareGptSessions(dataset, *think, num_sessions, seed);
  }
  if (name != "synthetic" && name != "random") {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset_name = \"", name,
                     "\": multi-turn sessions come from \"sharegpt\" or \"synthetic\" only "
                     "(flag --dataset-name)"));
  }
  absl::StatusOr<SessionTurnsRange> range = ParseSessionTurns(sessions.session_turns());
  if (!range.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("session_turns = \"", sessions.session_turns(),
                                                   "\": ", range.status().message(),
                                                   " (flag --session-turns)"));
  }
  absl::StatusOr<LengthDistParams> params = LengthDistParamsOf(dataset);
  if (!params.ok()) return params.status();
  return std::unique_ptr<SessionSource>(
      new SyntheticSessionSource(dataset, *params, *range, *think, num_sessions, seed));
}

}  // namespace surge::coordinator
