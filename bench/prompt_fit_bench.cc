// Benchmark (not a test): building N synthetic prompts (uniform 150..450
// tokens, chat) with each token counter: the estimate (BuildAssignmentPrompt),
// a SentencePiece model (the tiny corpus model, trained here with spm_train),
// and the server counter against the built-in server on 127.0.0.1 (its rule
// and chat template, one kept-alive connection). Prints prompts/s, counter
// calls per prompt and the set-up time. Results go to docs/DATASETS.md
// "Token counters". Usage: prompt_fit_bench [N=10000] [work_dir=/tmp/surge_fit_bench]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/tokenize_client.h"
#include "common/clock.h"
#include "common/prompt_builder.h"
#include "common/sentencepiece_model.h"
#include "coordinator/config/option_table.h"
#include "coordinator/dataset/fitted_payloads.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dataset/prompt_fitter.h"
#include "simserver/sim_server.h"

namespace {

namespace fs = std::filesystem;
using surge::coordinator::FitPayloads;
using surge::coordinator::FitReport;
using surge::coordinator::PayloadSource;
using surge::coordinator::PromptFitter;
using surge::coordinator::TextTokenCounter;

class ClientCounter final : public TextTokenCounter {
 public:
  explicit ClientCounter(surge::client::TokenizeClient* client) : client_(client) {}
  absl::StatusOr<uint32_t> Count(std::string_view text) override { return client_->Count(text); }

 private:
  surge::client::TokenizeClient* client_;
};

class ModelCounter final : public TextTokenCounter {
 public:
  explicit ModelCounter(const surge::SentencePieceModel* model) : model_(model) {}
  absl::StatusOr<uint32_t> Count(std::string_view text) override { return model_->Count(text); }

 private:
  const surge::SentencePieceModel* model_;
};

std::unique_ptr<PayloadSource> Payloads(uint64_t n) {
  surge::v1::DatasetConfig d = surge::coordinator::WithDefaults<surge::v1::DatasetConfig>();
  d.set_dataset_name("synthetic");
  d.set_random_input_len(300);
  d.set_random_output_len(16);
  d.set_random_len_dist("uniform");
  d.set_random_range_ratio(0.5);
  auto source = surge::coordinator::MakePayloadSource(d, n, 0);
  if (!source.ok()) {
    std::fprintf(stderr, "payloads: %s\n", std::string(source.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(source);
}

double SecondsSince(surge::Clock& clock, surge::Clock::TimePoint t) {
  return std::chrono::duration<double>(clock.Now() - t).count();
}

// Fits N prompts with `counter` and prints one line.
void Fit(const char* name, TextTokenCounter* counter, uint64_t n) {
  surge::Clock& clock = surge::RealClock();
  const auto t = clock.Now();
  auto fitter = PromptFitter::Create(counter);
  if (!fitter.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, std::string(fitter.status().message()).c_str());
    std::exit(1);
  }
  FitReport report;
  auto fitted = FitPayloads(Payloads(n), n, *fitter, surge::v1::TOKEN_COUNTER_SERVER, &report);
  if (!fitted.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, std::string(fitted.status().message()).c_str());
    std::exit(1);
  }
  const double s = SecondsSince(clock, t);
  const auto& st = report.stats;
  std::printf(
      "%-28s %8.0f prompts/s  set-up %.2f s for %llu prompts  %.2f calls/prompt (max %llu, "
      "calibration %llu)  inexact %llu  text %.1f MB\n",
      name, n / s, s, static_cast<unsigned long long>(n),
      static_cast<double>(st.prompt_calls) / static_cast<double>(n),
      static_cast<unsigned long long>(st.max_calls_per_prompt),
      static_cast<unsigned long long>(st.calibration_calls),
      static_cast<unsigned long long>(st.inexact_prompts), report.text_bytes / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  const fs::path dir = argc > 2 ? fs::path(argv[2]) : fs::path("/tmp/surge_fit_bench");
  fs::create_directories(dir);
  surge::Clock& clock = surge::RealClock();

  // The estimate: the text the worker builds itself.
  {
    auto payloads = Payloads(n);
    const auto t = clock.Now();
    size_t bytes = 0;
    for (uint64_t i = 0; i < n; ++i) {
      surge::v1::Assignment a;
      surge::coordinator::FillAssignmentPayload(payloads->At(i), &a);
      bytes += surge::BuildAssignmentPrompt(a).size();
    }
    const double s = SecondsSince(clock, t);
    std::printf("%-28s %8.0f prompts/s  set-up none (%.2f s to build %llu prompts)  0 calls  "
                "text %.1f MB (built by the workers)\n",
                "estimate", n / s, s, static_cast<unsigned long long>(n), bytes / 1e6);
  }

  // SentencePiece: the tiny corpus model.
  const std::string command = "spm_train --input=" + std::string(SURGE_SOURCE_DIR) +
                              "/common/corpus/public_domain.txt --model_prefix=" +
                              (dir / "tiny").string() +
                              " --vocab_size=300 --model_type=unigram --character_coverage=1.0"
                              " --minloglevel=2 > " + (dir / "spm.log").string() + " 2>&1";
  if (std::system(command.c_str()) == 0) {
    auto model = surge::SentencePieceModel::Load((dir / "tiny.model").string(), "tokenizer");
    if (model.ok()) {
      ModelCounter counter(model->get());
      Fit("sentencepiece (tiny model)", &counter, n);
    }
  } else {
    std::printf("sentencepiece: spm_train failed, skipped\n");
  }

  // The server counter against the built-in server on 127.0.0.1.
  surge::v1::SimServerConfig sim = surge::coordinator::WithDefaults<surge::v1::SimServerConfig>();
  sim.set_port(0);
  auto server = surge::simserver::SimServer::Create(sim);
  if (!server.ok()) return 1;
  (*server)->Start();
  surge::v1::TargetConfig target;
  target.set_base_url(absl::StrCat("http://127.0.0.1:", (*server)->port()));
  target.set_model("surge-sim");
  auto client = surge::client::TokenizeClient::Connect(target, /*chat=*/true,
                                                       std::chrono::milliseconds(30000));
  if (!client.ok()) {
    std::fprintf(stderr, "server: %s\n", std::string(client.status().message()).c_str());
    return 1;
  }
  ClientCounter counter(client->get());
  Fit("server (built-in, chat)", &counter, n);
  (*server)->Stop();
  return 0;
}
