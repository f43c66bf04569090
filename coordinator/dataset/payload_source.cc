#include "coordinator/dataset/payload_source.h"

#include <algorithm>
#include <boost/random/mersenne_twister.hpp>
#include <filesystem>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "coordinator/dataset/file_datasets.h"
#include "coordinator/dataset/length_distribution.h"
#include "coordinator/dataset/synthetic_prefixes.h"

namespace surge::coordinator {
namespace {

class SyntheticSource final : public PayloadSource {
 public:
  // Fixed lengths need no table; drawn lengths are drawn once, in request
  // order (input then output of request 0, then of request 1, ...), 8 bytes
  // per request.
  SyntheticSource(const surge::v1::DatasetConfig& d, const LengthDistParams& params,
                  uint64_t num_requests, uint64_t seed)
      : input_len_(d.random_input_len()),
        output_len_(d.random_output_len()),
        seed_(seed),
        prefixes_(d.random_prefix_len(), d.random_prefix_groups(), seed) {
    if (params.dist == LengthDist::kFixed) return;
    const LengthSampler input(input_len_, params);
    const LengthSampler output(output_len_, params);
    boost::random::mt19937_64 engine(LengthEngineSeed(seed));
    lengths_.resize(2 * num_requests);
    for (uint64_t i = 0; i < num_requests; ++i) {
      lengths_[2 * i] = input.Draw(engine);
      lengths_[2 * i + 1] = output.Draw(engine);
    }
  }
  Payload At(uint64_t index) const override {
    Payload p =
        2 * index + 1 < lengths_.size()
            ? Payload(lengths_[2 * index], lengths_[2 * index + 1], PromptSeed(seed_, index))
            : Payload(input_len_, output_len_, PromptSeed(seed_, index));
    prefixes_.Apply(index, &p);
    return p;
  }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  uint32_t input_len_, output_len_;
  uint64_t seed_;
  SyntheticPrefixes prefixes_;
  std::vector<uint32_t> lengths_;
  std::string name_ = "synthetic";
  std::vector<std::string> warnings_;
};

class TableSource final : public PayloadSource {
 public:
  TableSource(std::string name, std::vector<Payload> rows, std::vector<std::string> warnings,
              std::vector<double> replay_offsets_s, bool replay)
      : name_(std::move(name)),
        rows_(std::move(rows)),
        warnings_(std::move(warnings)),
        replay_offsets_s_(std::move(replay_offsets_s)),
        replay_(replay) {}
  Payload At(uint64_t index) const override { return rows_[index % rows_.size()]; }
  PromptSizing Sizing(uint64_t index) const override {
    const Payload& row = rows_[index % rows_.size()];
    return PromptSizing{row.input_tokens, row.prompt_text.empty()
                                              ? surge::v1::TOKEN_COUNTER_ESTIMATE
                                              : surge::v1::TOKEN_COUNTER_DATASET};
  }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }
  const std::vector<double>* replay_offsets_s() const override {
    return replay_ ? &replay_offsets_s_ : nullptr;
  }

 private:
  std::string name_;
  std::vector<Payload> rows_;
  std::vector<std::string> warnings_;
  std::vector<double> replay_offsets_s_;
  bool replay_;
};

// Sorts the rows stably by timestamp when they are not in order; returns the
// warning that says so (empty when they were in order).
std::string SortByTimestamp(const std::string& path, DatasetRows& d) {
  const size_t n = d.rows.size();
  size_t first_bad = 0;
  for (size_t i = 1; i < n; ++i) {
    if (d.timestamps_ms[i] < d.timestamps_ms[i - 1]) {
      first_bad = i;
      break;
    }
  }
  if (first_bad == 0) return "";
  const std::string warning = absl::StrCat(
      "trace ", path, " is not in timestamp order (line ", d.lines[first_bad], " has timestamp ",
      d.timestamps_ms[first_bad], " ms, line ", d.lines[first_bad - 1], " ",
      d.timestamps_ms[first_bad - 1], " ms); for replay its first ", n,
      " requests were sorted stably by timestamp, so request i is the i-th earliest of them");
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return d.timestamps_ms[a] < d.timestamps_ms[b]; });
  DatasetRows sorted;
  sorted.warnings = std::move(d.warnings);
  for (size_t i : order) {
    sorted.rows.push_back(std::move(d.rows[i]));
    sorted.lines.push_back(d.lines[i]);
    sorted.timestamps_ms.push_back(d.timestamps_ms[i]);
  }
  d = std::move(sorted);
  return warning;
}

// Offsets of requests 0..N-1 from the sorted timestamps of L rows:
// (t − t_0) · scale / 1000 s; request i ≥ L uses row i mod L shifted by
// ⌊i / L⌋ periods of span · L / (L − 1) (the span plus one mean interval).
std::vector<double> ReplayOffsets(const std::vector<double>& timestamps_ms, double scale,
                                  uint64_t num_requests) {
  const size_t rows = timestamps_ms.size();
  const double first = timestamps_ms.front();
  std::vector<double> base(rows);
  for (size_t i = 0; i < rows; ++i) base[i] = (timestamps_ms[i] - first) * scale / 1000.0;
  const double period =
      rows >= 2 ? base.back() * static_cast<double>(rows) / static_cast<double>(rows - 1) : 0.0;
  std::vector<double> offsets(num_requests);
  for (uint64_t i = 0; i < num_requests; ++i) {
    offsets[i] = base[i % rows] + static_cast<double>(i / rows) * period;
  }
  return offsets;
}

// The payloads of a plan with traffic classes (MakeClassPayloadSource).
class ClassPayloadSource final : public PayloadSource {
 public:
  ClassPayloadSource(std::vector<std::unique_ptr<PayloadSource>> sources,
                     std::vector<TrafficClassTag> tags, std::vector<uint16_t> class_index,
                     std::vector<uint64_t> class_request)
      : sources_(std::move(sources)),
        tags_(std::move(tags)),
        class_index_(std::move(class_index)),
        class_request_(std::move(class_request)) {
    for (size_t c = 0; c < sources_.size(); ++c) {
      for (const std::string& w : sources_[c]->warnings()) {
        warnings_.push_back(absl::StrCat("class ", tags_[c].name, ": ", w));
      }
    }
  }
  Payload At(uint64_t index) const override {
    const uint16_t c = class_index_[index];
    Payload p = sources_[c]->At(class_request_[index]);
    p.traffic_class = &tags_[c];
    return p;
  }
  const std::string& name() const override { return sources_.front()->name(); }
  const std::vector<std::string>& warnings() const override { return warnings_; }
  PromptSizing Sizing(uint64_t index) const override {
    return sources_[class_index_[index]]->Sizing(class_request_[index]);
  }
  const TrafficClassTag* ClassOf(uint64_t index) const override {
    return &tags_[class_index_[index]];
  }

 private:
  std::vector<std::unique_ptr<PayloadSource>> sources_;
  std::vector<TrafficClassTag> tags_;
  std::vector<uint16_t> class_index_;
  std::vector<uint64_t> class_request_;
  std::vector<std::string> warnings_;
};

}  // namespace

std::unique_ptr<PayloadSource> MakeClassPayloadSource(
    std::vector<std::unique_ptr<PayloadSource>> sources, std::vector<TrafficClassTag> tags,
    std::vector<uint16_t> class_index, std::vector<uint64_t> class_request) {
  return std::make_unique<ClassPayloadSource>(std::move(sources), std::move(tags),
                                              std::move(class_index), std::move(class_request));
}

PromptSizing PayloadSource::Sizing(uint64_t index) const {
  const Payload payload = At(index);
  return PromptSizing{payload.input_tokens, payload.prompt_text.empty()
                                                ? surge::v1::TOKEN_COUNTER_ESTIMATE
                                                : surge::v1::TOKEN_COUNTER_DATASET};
}

void FillAssignmentPayload(Payload payload, surge::v1::Assignment* assignment) {
  assignment->set_input_tokens(payload.input_tokens);
  assignment->set_max_tokens(payload.max_tokens);
  assignment->set_prompt_seed(payload.prompt_seed);
  if (!payload.prompt_text.empty()) {
    // The readers parse JSON, which already refuses invalid UTF-8; this
    // keeps any other source from making the assignment batch undecodable.
    MakeValidUtf8(&payload.prompt_text);
    assignment->set_prompt_text(std::move(payload.prompt_text));
  }
  assignment->mutable_prefix_block_ids()->Assign(payload.prefix_block_ids.begin(),
                                                 payload.prefix_block_ids.end());
  if (payload.prefix_tokens > 0) {
    assignment->set_prefix_tokens(payload.prefix_tokens);
    assignment->set_prefix_seed(payload.prefix_seed);
  }
  if (payload.traffic_class != nullptr) {
    assignment->set_model(payload.traffic_class->model);
    for (const std::string& h : payload.traffic_class->headers) assignment->add_headers(h);
  }
}

absl::StatusOr<std::unique_ptr<PayloadSource>> MakePayloadSource(
    const surge::v1::DatasetConfig& dataset, uint64_t num_requests, uint64_t seed) {
  const std::string& name = dataset.dataset_name();
  const std::string& path = dataset.dataset_path();
  if (name != "synthetic" && name != "random") {
    // A directory, a device or a missing path is a configuration error, found
    // before any reader opens it (R-CFG-1).
    if (absl::Status s = CheckDatasetFile(path); !s.ok()) return s;
  }
  if (name == "synthetic" || name == "random") {
    absl::StatusOr<LengthDistParams> params = LengthDistParamsOf(dataset);
    if (!params.ok()) return params.status();
    return std::unique_ptr<PayloadSource>(
        new SyntheticSource(dataset, *params, num_requests, seed));
  }
  const bool replay = dataset.trace_replay();
  if (replay && name != "mooncake") {
    return absl::InvalidArgumentError(absl::StrCat(
        "trace_replay = true: only the \"mooncake\" dataset has timestamps, not \"", name, "\""));
  }
  absl::StatusOr<DatasetRows> rows;
  if (name == "jsonl") {
    rows = ReadJsonlRows(path, num_requests, dataset.random_output_len(), seed);
  } else if (name == "sharegpt") {
    rows = ReadShareGptRows(path, num_requests, dataset.random_output_len(), seed);
  } else if (name == "mooncake") {
    rows = ReadMooncakeRows(path, num_requests, seed, replay);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("dataset_name \"", name, "\" is not supported"));
  }
  if (!rows.ok()) return rows.status();
  std::vector<std::string> warnings = std::move(rows->warnings);
  std::vector<double> offsets;
  if (replay) {
    if (std::string w = SortByTimestamp(path, *rows); !w.empty()) warnings.push_back(w);
    const double scale = dataset.has_trace_time_scale() ? dataset.trace_time_scale() : 1.0;
    offsets = ReplayOffsets(rows->timestamps_ms, scale, num_requests);
  }
  const size_t n_rows = rows->rows.size();
  if (n_rows < num_requests) {
    warnings.push_back(absl::StrCat(
        "dataset ", path, " has ", n_rows, " requests; ", num_requests,
        " were asked for, so its rows are reused from the top (request i uses row i mod ", n_rows,
        ")",
        replay ? absl::StrCat("; in replay each reuse starts one trace span plus one mean "
                              "interval (",
                              n_rows >= 2 ? offsets[n_rows - 1] * static_cast<double>(n_rows) /
                                                static_cast<double>(n_rows - 1)
                                          : 0.0,
                              " s) after the one before")
               : std::string()));
  }
  return std::unique_ptr<PayloadSource>(new TableSource(std::filesystem::path(path).stem().string(),
                                                        std::move(rows->rows), std::move(warnings),
                                                        std::move(offsets), replay));
}

}  // namespace surge::coordinator
