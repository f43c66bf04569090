#include "coordinator/dataset/payload_source.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace surge::coordinator {
namespace {

// Spreads prompt start words over the corpus: a prime stride per index, and
// the run seed so two seeds do not send identical texts.
uint64_t PromptSeed(uint64_t seed, uint64_t index) { return seed * 1000003ULL + index * 7919ULL; }

class SyntheticSource final : public PayloadSource {
 public:
  SyntheticSource(uint32_t input_len, uint32_t output_len, uint64_t seed)
      : input_len_(input_len), output_len_(output_len), seed_(seed) {}
  Payload At(uint64_t index) const override {
    return Payload{input_len_, output_len_, PromptSeed(seed_, index)};
  }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  uint32_t input_len_, output_len_;
  uint64_t seed_;
  std::string name_ = "synthetic";
  std::vector<std::string> warnings_;
};

class TableSource final : public PayloadSource {
 public:
  TableSource(std::string name, std::vector<Payload> rows, std::vector<std::string> warnings)
      : name_(std::move(name)), rows_(std::move(rows)), warnings_(std::move(warnings)) {}
  Payload At(uint64_t index) const override { return rows_[index % rows_.size()]; }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  std::string name_;
  std::vector<Payload> rows_;
  std::vector<std::string> warnings_;
};

absl::StatusOr<uint32_t> ReadLength(const nlohmann::json& row, const char* key,
                                    const std::string& where) {
  auto it = row.find(key);
  if (it == row.end() || !it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<int64_t>() > (1 << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": \"", key, "\" must be a whole number of tokens, 0..16777216"));
  }
  return static_cast<uint32_t>(it->get<int64_t>());
}

absl::StatusOr<std::unique_ptr<PayloadSource>> LoadMooncake(const std::string& path,
                                                            uint64_t num_requests,
                                                            uint64_t seed) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid configuration:\n  dataset_path = \"", path, "\": cannot open the file"));
  }
  std::vector<Payload> rows;
  std::string line;
  uint64_t line_no = 0;
  // Only the first N lines are needed: a run of 2,000 requests does not parse
  // a trace of millions.
  while (rows.size() < num_requests && std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = absl::StrCat("dataset_path ", path, " line ", line_no);
    nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() || !row.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": not a JSON object"));
    }
    auto input = ReadLength(row, "input_length", where);
    if (!input.ok()) return input.status();
    auto output = ReadLength(row, "output_length", where);
    if (!output.ok()) return output.status();
    // max_tokens 0 is rejected by OpenAI-compatible servers; such trace rows
    // ask for one token.
    rows.push_back(Payload{*input, std::max<uint32_t>(*output, 1),
                           PromptSeed(seed, rows.size())});
  }
  if (rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset_path ", path, ": no requests in the file"));
  }
  std::vector<std::string> warnings;
  if (rows.size() < num_requests) {
    warnings.push_back(absl::StrCat("dataset ", path, " has ", rows.size(), " requests; ",
                                    num_requests, " were asked for, so its rows are reused "
                                                  "from the top (request i uses row i mod ",
                                    rows.size(), ")"));
  }
  return std::unique_ptr<PayloadSource>(new TableSource(
      std::filesystem::path(path).stem().string(), std::move(rows), std::move(warnings)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PayloadSource>> MakePayloadSource(
    const surge::v1::DatasetConfig& dataset, uint64_t num_requests, uint64_t seed) {
  const std::string& name = dataset.dataset_name();
  if (name == "synthetic" || name == "random") {
    return std::unique_ptr<PayloadSource>(
        new SyntheticSource(dataset.random_input_len(), dataset.random_output_len(), seed));
  }
  if (name == "mooncake") return LoadMooncake(dataset.dataset_path(), num_requests, seed);
  return absl::InvalidArgumentError(absl::StrCat("dataset_name \"", name, "\" is not supported"));
}

}  // namespace surge::coordinator
