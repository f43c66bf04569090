// The run configuration: defaults, the YAML reader and the validator
// (R-CFG-1, R-UI-2). Flags are applied on top by the CLI (app); the hints
// for unknown names are name_hints.h.
#ifndef SURGE_COORDINATOR_CONFIG_RUN_CONFIG_H_
#define SURGE_COORDINATOR_CONFIG_RUN_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/config/name_hints.h"
#include "surge/v1/config.pb.h"

namespace surge::coordinator {

// Every default of the run options (R-UI-2): each field's default_value in config.proto
// (num_prompts 1000, seed 0, endpoint /v1/chat/completions, streaming, 600 s
// request timeout, dataset "synthetic" with 1024 input / 128 output tokens,
// output_dir "outputs/default", sim server TTFT 20 ms and 2 ms per token,
// request_rate 0, ...), set by OptionTable::SetDefaults.
surge::v1::RunConfig DefaultRunConfig();

// Reads the YAML file at `path` into `config`, overwriting only the keys the
// file sets. A run folder holding a run_config.json stands for that file.
// The keys are those of config.proto's option table (option_table.h): flat
// AISBench names (request_rate, num_prompts, model, base_url, dataset_name,
// sim_ttft_ms, ...) plus the traffic_cfg and goodput mappings.
// Errors: INVALID_ARGUMENT listing every problem, one per line, each naming
// the field path, the value and what is allowed (unknown key with a hint,
// wrong type, unreadable file, YAML syntax with its line), then once the
// allowed keys.
absl::Status LoadYamlConfig(const std::string& path, surge::v1::RunConfig* config);

// Reads the protobuf JSON form of a RunConfig ("trafficCfg": {...}), which
// run folders written by early surge hold, into `config` (which it
// replaces, as protobuf's JSON reader does); unknown fields are ignored. Enum fields may be given
// by their configuration spelling
// ("late_policy": "cap", as surge wrote them while they were strings) or by
// their proto names. Errors: INVALID_ARGUMENT (not such JSON).
absl::Status ParseProtoJsonConfig(const std::string& json, surge::v1::RunConfig* config);

// Applies the options that imply another, as vLLM does: a synthetic dataset
// with no random_len_dist and exactly one distribution parameter given
// (random_range_ratio > 0 → "uniform", random_len_stddev > 0 → "gaussian",
// random_zipf_s present → "zipf") gets that distribution. Returns one
// sentence per change (for an INFO line). Parameters of two distributions,
// or one contradicting a named distribution, are left for
// ValidateRunConfig to refuse.
std::vector<std::string> ApplyImpliedOptions(surge::v1::RunConfig* config);

// Checks every field against its valid set (R-CFG-1): each field's own
// spec (OptionTable::Check: bounds, allowed values, UTF-8, files), then the
// rules across fields. Errors: INVALID_ARGUMENT listing every problem, one
// per line, as "<field path> = <value>: <what is allowed> (flag --x)".
absl::Status ValidateRunConfig(const surge::v1::RunConfig& config);

// Exact replay (docs/REPLAY.md): the keys that make the plan or the
// payloads — request_rate, traffic_cfg, num_prompts, seed and the dataset
// keys (dataset_name, dataset_path, random_input_len, random_output_len,
// random_len_dist and its parameter, trace_replay, trace_time_scale) — on
// which `given` differs from `made_with` (the plan's run_config.json), as
// SavedConfigJson writes them (keys without effect left out, so e.g. a
// burstiness in instant mode is no difference). One line per key:
// "<key> = <given> (flag --<flag>), but the plan was made with <saved>".
// Empty = the same plan and payloads. Paths are compared as given (make
// them absolute first). Pure.
std::vector<std::string> PlanDefiningDifferences(const surge::v1::RunConfig& made_with,
                                                 const surge::v1::RunConfig& given);

// Things that are allowed but probably not meant, one sentence each (the CLI
// prints them as WARNING lines): a base_url path ending in the segment the
// endpoint starts with ("/v1" + "/v1/chat/completions" requests
// "/v1/v1/chat/completions"; not changed, only warned), and extra_body_json
// overriding max_tokens / max_completion_tokens or dropping
// stream_options.include_usage; and every option that has no effect in this
// run, naming its flags: ramp rates without a strategy, burstiness in instant
// mode, trace_time_scale without trace_replay, length-distribution options
// with a file dataset, ca_cert_path / insecure_skip_verify without an https
// base_url, sim_* options (changed from their defaults) with a base_url.
std::vector<std::string> ConfigWarnings(const surge::v1::RunConfig& config);

// The configuration as `--config` reads it back (flat AISBench keys plus the
// traffic_cfg and goodput mappings; JSON, which is YAML; each field as its
// spec's save policy says, in config.proto's field order), so that
// `--config run_config.json` reproduces the run and its plan byte for byte.
// Keys that had no effect are left out: request_rate under an active ramp,
// the traffic keys in a trace replay, the ramp keys of an absent or inactive
// ramp, burstiness in instant mode, the synthetic length keys for file
// datasets (random_output_len too for Mooncake), the other distributions'
// parameters, trace_time_scale without replay, the TLS keys without https,
// the built-in server's keys when a base_url is given (its fault settings
// when no fault is asked). A +inf value (request_rate) is
// written "inf" (JSON has no infinity; LoadYamlConfig reads it back). Never holds a secret: no API
// key (only api_key_file's path), and headers whose name suggests a credential (auth, key, token,
// secret, cookie, password) are left out, their names appended to
// `left_out` (may be null).
std::string SavedConfigJson(const surge::v1::RunConfig& config, std::vector<std::string>* left_out);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CONFIG_RUN_CONFIG_H_
