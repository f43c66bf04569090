// Readers of the dataset files (jsonl, sharegpt, mooncake): rows of payloads
// in file order. Internal to coordinator/dataset; MakePayloadSource
// (payload_source.h) turns them into a PayloadSource.
#ifndef SURGE_COORDINATOR_DATASET_FILE_DATASETS_H_
#define SURGE_COORDINATOR_DATASET_FILE_DATASETS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/dataset/payload_source.h"

namespace surge::coordinator {

// The rows of one file, at most the N asked for.
struct DatasetRows {
  std::vector<Payload> rows;
  // Line of each row in the file (1-based; the array element for sharegpt).
  std::vector<uint64_t> lines;
  // Mooncake with timestamps: each row's timestamp, ms.
  std::vector<double> timestamps_ms;
  std::vector<std::string> warnings;
};

// The multi-turn sessions of one ShareGPT file (ReadShareGptSessions), at
// most the N asked for.
struct SessionRows {
  // Each session's turns, in order, >= 1 each.
  std::vector<std::vector<Payload>> sessions;
  // Element of each session in the file's array (0-based).
  std::vector<uint64_t> elements;
  std::vector<std::string> warnings;
};

// One turn of a ShareGPT conversation, as the file has it.
struct ShareGptTurn {
  std::string from;
  std::string value;
};

// Where the prompt of request `index` starts in the corpus: a prime stride
// per index, and the run seed so two seeds do not send identical texts.
uint64_t PromptSeed(uint64_t seed, uint64_t index);

// Most turns a synthetic session can have (session_turns).
inline constexpr uint32_t kMaxSessionTurns = 1000;

// The prompt index (for PromptSeed) of turn `turn` of session `session`:
// session * kMaxSessionTurns + turn, so that every turn of every synthetic
// session (turn < kMaxSessionTurns) has a prompt seed of its own.
uint64_t SessionTurnIndex(uint64_t session, uint32_t turn);

// OK when `path` is a regular file; else the configuration error that says
// it is missing or not a regular file (naming dataset_path and its flag).
absl::Status CheckDatasetFile(const std::string& path);

// jsonl: "prompt" or "messages", optional "max_tokens" (else
// `default_max_tokens`). Errors name the file and line.
absl::StatusOr<DatasetRows> ReadJsonlRows(const std::string& path, uint64_t max_rows,
                                          uint32_t default_max_tokens, uint64_t seed);

// sharegpt: a JSON array of conversations, read as a stream. Errors name the
// file and the element (0-based) or, for JSON syntax, the line.
absl::StatusOr<DatasetRows> ReadShareGptRows(const std::string& path, uint64_t max_rows,
                                             uint32_t default_max_tokens, uint64_t seed);

// A ShareGPT human turn: "from" is "human" or "user".
bool IsShareGptHumanRole(const std::string& from);

// max_tokens for the human turn at `human` of `turns`: the estimated tokens
// of the turn right after it when that is an answer (any "from" but a human
// one or "system") and not empty, at most kMaxDrawnTokens; else
// `default_max_tokens`.
uint32_t ShareGptAnswerTokens(const std::vector<ShareGptTurn>& turns, size_t human,
                              uint32_t default_max_tokens);

// The one reader of ShareGPT files: streams the JSON array at `path` one
// conversation at a time (a file of hundreds of MB is never held whole),
// checks that each is {"conversations": [{"from": string, "value": string},
// ...]} and gives its element index (0-based) and turns to
// `on_conversation`, in file order, until it returns false. Errors name the
// file and the element or, for JSON syntax, the line.
absl::Status ForEachShareGptConversation(
    const std::string& path,
    const std::function<bool(uint64_t, std::vector<ShareGptTurn>&&)>& on_conversation);

// sharegpt sessions: every non-empty human turn of a conversation, in
// order, is a turn (prompt seed PromptSeed(seed, SessionTurnIndex(row,
// turn))), its max_tokens ShareGptAnswerTokens. Conversations without one
// are skipped, with one warning that counts them; a file with none is an
// error naming it.
absl::StatusOr<SessionRows> ReadShareGptSessions(const std::string& path, uint64_t max_sessions,
                                                 uint32_t default_max_tokens, uint64_t seed);

// mooncake: input_length, output_length, hash_ids, and timestamp when
// `with_timestamps`. Errors name the file and line.
absl::StatusOr<DatasetRows> ReadMooncakeRows(const std::string& path, uint64_t max_rows,
                                             uint64_t seed, bool with_timestamps);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_FILE_DATASETS_H_
