// The run configuration: defaults, the YAML reader and the validator
// (SPEC §2 R-CFG-1, R-UI-2). Flags are applied on top by the CLI (app).
#ifndef SURGE_COORDINATOR_CONFIG_RUN_CONFIG_H_
#define SURGE_COORDINATOR_CONFIG_RUN_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// Every default of SPEC R-UI-2 and config.proto: num_prompts 1000, seed 0,
// endpoint /v1/chat/completions, streaming, 600 s request timeout, dataset
// "synthetic" with 1024 input / 128 output tokens, output_dir
// "outputs/default", sim server TTFT 20 ms and 2 ms per token, request_rate 0.
surge::v1::RunConfig DefaultRunConfig();

// Reads the YAML file at `path` into `config`, overwriting only the keys the
// file sets. Keys are flat AISBench names (request_rate, traffic_cfg.{...},
// num_prompts, max_concurrency, seed, workers, output_dir, model, base_url,
// endpoint, stream, request_timeout_s, dataset_name, dataset_path,
// random_input_len, random_output_len, sim_ttft_ms, sim_itl_ms; datasets:
// random_len_dist, random_range_ratio, random_len_stddev, random_zipf_s,
// trace_replay, trace_time_scale).
// Errors: INVALID_ARGUMENT listing every problem, one per line, each naming
// the field path, the value and what is allowed (unknown key, wrong type,
// unreadable file, YAML syntax with its line).
absl::Status LoadYamlConfig(const std::string& path, surge::v1::RunConfig* config);

// Checks every field against its valid set (R-CFG-1). Errors:
// INVALID_ARGUMENT listing every problem, one per line, as
// "<field path> = <value>: <what is allowed>".
absl::Status ValidateRunConfig(const surge::v1::RunConfig& config);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CONFIG_RUN_CONFIG_H_
