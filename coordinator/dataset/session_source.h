// Where multi-turn sessions come from (docs/DATASETS.md "Multi-turn
// sessions"): each session's turns (their payloads) and the think time
// before each turn. A ShareGPT file gives its conversations' human turns;
// synthetic sessions draw their turn counts and lengths from the run seed.
#ifndef SURGE_COORDINATOR_DATASET_SESSION_SOURCE_H_
#define SURGE_COORDINATOR_DATASET_SESSION_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/dataset/payload_source.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// One turn of a session: its payload (input_tokens, max_tokens, prompt_seed,
// prompt_text; no shared prefixes) and the think time before it, ns (0 for turn 0).
struct SessionTurnPayload {
  Payload payload;
  int64_t think_ns = 0;
};

// Where sessions come from. Immutable after creation; thread-safe; At() is deterministic
// (same config, seed, session -> same turns) and does not need the other sessions.
class SessionSource {
 public:
  virtual ~SessionSource() = default;
  // Number of sessions it was made for (the N asked).
  virtual uint64_t num_sessions() const = 0;
  // Turns of session `session` (< N), >= 1; cheap (O(1)), used to size the ledger.
  virtual uint32_t TurnsOf(uint64_t session) const = 0;
  // All turns of session `session`, in order; turns()[0].think_ns == 0.
  virtual std::vector<SessionTurnPayload> At(uint64_t session) const = 0;
  // Output file stem as PayloadSource::name() ("synthetic" or the file's stem), and log warnings.
  virtual const std::string& name() const = 0;
  virtual const std::vector<std::string>& warnings() const = 0;
};

// Builds the sessions of `dataset` (dataset_name "synthetic"/"random" or "sharegpt"; others are an
// INVALID_ARGUMENT naming --dataset-name) for `num_sessions` sessions with `seed` (the run seed).
// - sharegpt: session i is usable conversation i of dataset_path (those
//   without a non-empty human turn are skipped, with a warning that counts
//   them); its turns are the conversation's non-empty human turns, in
//   order: prompt_text the turn's text, max_tokens the estimated tokens of
//   the answer right after it, else random_output_len. Only the first N
//   usable conversations are read; with fewer, session i uses conversation
//   i mod their number, with a warning. A file without any human turn is an
//   INVALID_ARGUMENT naming it. session_turns must be empty.
// - synthetic: session i has session_turns turns ("N", or "MIN-MAX": the
//   count of session i is the i-th draw, uniform over MIN..MAX, of an
//   engine seeded SplitMix64(seed ^ kTurnCountStream)); turn k's input and
//   output lengths are drawn as a single synthetic request's
//   (random_input_len, random_output_len, random_len_dist), input then
//   output for turn 0, 1, ..., from the session's engine of kLengthStream;
//   its prompt seed is PromptSeed(seed, SessionTurnIndex(i, k)).
// - think times: turn 0's is 0; turns 1..n-1 draw theirs in order from the
//   session's engine of kThinkStream: think_time_s (fixed, default 0), or
//   think_time_dist "fixed" (= think_time_mean_s), "exponential" (mean
//   think_time_mean_s) or "gamma" (shape think_time_burstiness, default 1,
//   mean think_time_mean_s); rounded to whole ns.
// A session's engine of a stream is boost::random::mt19937_64 seeded
// SessionEngineSeed(seed, stream, i).
absl::StatusOr<std::unique_ptr<SessionSource>> MakeSessionSource(
    const surge::v1::DatasetConfig& dataset, const surge::v1::SessionConfig& sessions,
    uint64_t num_sessions, uint64_t seed);

// The turn counts session_turns allows: "N" (min = max = N) or "MIN-MAX",
// whole numbers with 1 <= MIN <= MAX <= kMaxSessionTurns (1000); empty = 3.
struct SessionTurnsRange {
  uint32_t min_turns = 3;
  uint32_t max_turns = 3;
};

// Parses session_turns. Errors: INVALID_ARGUMENT whose message says what is
// allowed (without the field's name, which the caller adds).
absl::StatusOr<SessionTurnsRange> ParseSessionTurns(const std::string& text);

// The streams of random numbers of a session, each an engine of its own so
// that e.g. the think-time options do not change the lengths.
inline constexpr uint64_t kTurnCountStream = 0x7475726e73ULL;   // "turns"
inline constexpr uint64_t kLengthStream = 0x6c656e67746873ULL;  // "lengths"
inline constexpr uint64_t kThinkStream = 0x7468696e6bULL;       // "think"

// Seed of session `session`'s engine of `stream` for the run seed:
// SplitMix64(SplitMix64(run_seed ^ stream) + session) (common/split_mix.h).
uint64_t SessionEngineSeed(uint64_t run_seed, uint64_t stream, uint64_t session);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_SESSION_SOURCE_H_
