// Readers of the dataset files (jsonl, sharegpt, mooncake): rows of payloads
// in file order. Internal to coordinator/dataset; MakePayloadSource
// (payload_source.h) turns them into a PayloadSource.
#ifndef SURGE_COORDINATOR_DATASET_FILE_DATASETS_H_
#define SURGE_COORDINATOR_DATASET_FILE_DATASETS_H_

#include <cstdint>
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

// Where the prompt of request `index` starts in the corpus: a prime stride
// per index, and the run seed so two seeds do not send identical texts.
uint64_t PromptSeed(uint64_t seed, uint64_t index);

// jsonl: "prompt" or "messages", optional "max_tokens" (else
// `default_max_tokens`). Errors name the file and line.
absl::StatusOr<DatasetRows> ReadJsonlRows(const std::string& path, uint64_t max_rows,
                                          uint32_t default_max_tokens, uint64_t seed);

// sharegpt: a JSON array of conversations, read as a stream. Errors name the
// file and the element (0-based) or, for JSON syntax, the line.
absl::StatusOr<DatasetRows> ReadShareGptRows(const std::string& path, uint64_t max_rows,
                                             uint32_t default_max_tokens, uint64_t seed);

// mooncake: input_length, output_length, hash_ids, and timestamp when
// `with_timestamps`. Errors name the file and line.
absl::StatusOr<DatasetRows> ReadMooncakeRows(const std::string& path, uint64_t max_rows,
                                             uint64_t seed, bool with_timestamps);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_FILE_DATASETS_H_
