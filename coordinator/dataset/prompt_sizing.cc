#include "coordinator/dataset/prompt_sizing.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/tokenize_client.h"
#include "common/log.h"
#include "common/sentencepiece_model.h"
#include "coordinator/dataset/fitted_payloads.h"
#include "coordinator/dataset/prompt_fitter.h"

namespace surge::coordinator {
namespace {

using surge::v1::RunConfig;
using surge::v1::TokenCounter;

// Each tokenize exchange may take this long (a long prompt on a busy server).
constexpr std::chrono::milliseconds kTokenizeTimeout{30000};

class ServerCounter final : public TextTokenCounter {
 public:
  explicit ServerCounter(std::unique_ptr<client::TokenizeClient> client)
      : client_(std::move(client)) {}
  absl::StatusOr<uint32_t> Count(std::string_view text) override { return client_->Count(text); }

 private:
  std::unique_ptr<client::TokenizeClient> client_;
};

class SentencePieceCounter final : public TextTokenCounter {
 public:
  explicit SentencePieceCounter(std::unique_ptr<SentencePieceModel> model)
      : model_(std::move(model)) {}
  absl::StatusOr<uint32_t> Count(std::string_view text) override { return model_->Count(text); }

 private:
  std::unique_ptr<SentencePieceModel> model_;
};

// The counter and what the log says of it. Errors: see SizePrompts.
struct Counter {
  std::unique_ptr<TextTokenCounter> counter;
  std::string description;
};

absl::StatusOr<Counter> MakeCounter(const RunConfig& config, bool chat) {
  const std::string& tokenizer = config.dataset().tokenizer();
  if (TokenCounterOf(tokenizer) == surge::v1::TOKEN_COUNTER_SERVER) {
    auto client = client::TokenizeClient::Connect(config.target(), chat, kTokenizeTimeout);
    if (!client.ok()) return client.status();
    std::string description = absl::StrCat(
        "server: the ", client::TokenizeShapeName((*client)->shape()), " tokenize endpoint at ",
        (*client)->url(),
        chat ? ((*client)->counts_template() ? " (chat messages: the chat template counted)"
                                             : " (text alone: this shape has no chat template)")
             : "");
    if (chat && !(*client)->counts_template()) {
      LogWarning(absl::StrCat(
          "--tokenizer server: the ", client::TokenizeShapeName((*client)->shape()),
          " tokenize endpoint counts text, not chat messages: chat prompts will be longer than "
          "asked by the server's chat template (use a completions --endpoint for exact lengths)"));
    }
    return Counter{std::make_unique<ServerCounter>(*std::move(client)), std::move(description)};
  }
  auto model = SentencePieceModel::Load(tokenizer, "tokenizer (flag --tokenizer)");
  if (!model.ok()) {
    if (model.status().code() == absl::StatusCode::kFailedPrecondition) return model.status();
    return absl::InvalidArgumentError(model.status().message());
  }
  if (chat) {
    LogWarning(absl::StrCat(
        "--tokenizer ", tokenizer,
        ": an offline model counts the prompt text alone; a chat endpoint adds its chat "
        "template's tokens to every prompt, which no .model file describes. For exact chat "
        "lengths use --tokenizer server; for exact lengths with this model use a completions "
        "endpoint (--endpoint /v1/completions)"));
  }
  return Counter{std::make_unique<SentencePieceCounter>(*std::move(model)),
                 absl::StrCat("SentencePiece model ", tokenizer)};
}

std::string Megabytes(uint64_t bytes) {
  return absl::StrFormat("%.1f MB", static_cast<double>(bytes) / 1e6);
}

void LogFit(const std::string& description, const PromptFitter& fitter, const FitReport& report,
            double seconds) {
  const FitStats& s = report.stats;
  const uint64_t shared_calls = s.calls - s.calibration_calls - s.prompt_calls;
  LogInfo(absl::StrFormat(
      "tokenizer %s: %d prompts fitted in %.2f s, %.2f tokenize calls per prompt (max %d), plus "
      "%d shared texts (prefixes, blocks) in %d calls and %d calibration calls; empty prompt %d "
      "tokens, %.2f tokens per word, filler \"%s\"; the coordinator holds %s of prompt text",
      description, report.fitted_prompts, seconds,
      report.fitted_prompts > 0 ? static_cast<double>(s.prompt_calls) / report.fitted_prompts
                                : 0.0,
      s.max_calls_per_prompt, report.shared_texts, shared_calls, s.calibration_calls,
      fitter.empty_prompt_tokens(), fitter.tokens_per_word(), fitter.filler(),
      Megabytes(report.text_bytes)));
  if (s.inexact_prompts > 0) {
    LogWarning(absl::StrCat(s.inexact_prompts, " of ", report.fitted_prompts,
                            " prompts could not be fitted to their exact asked length (the "
                            "records' asked_input_tokens and input_tokens show by how much)"));
  }
}

}  // namespace

TokenCounter TokenCounterOf(const std::string& tokenizer) {
  if (tokenizer.empty() || tokenizer == "estimate") return surge::v1::TOKEN_COUNTER_ESTIMATE;
  if (tokenizer == "server") return surge::v1::TOKEN_COUNTER_SERVER;
  return surge::v1::TOKEN_COUNTER_SENTENCEPIECE;
}

bool IsChatEndpoint(const std::string& endpoint) {
  return endpoint.empty() || absl::EndsWith(endpoint, "/chat/completions");
}

absl::StatusOr<std::unique_ptr<PayloadSource>> SizePrompts(
    const RunConfig& config, std::unique_ptr<PayloadSource> payloads, Clock& clock) {
  const TokenCounter kind = TokenCounterOf(config.dataset().tokenizer());
  if (kind == surge::v1::TOKEN_COUNTER_ESTIMATE) return payloads;
  const std::string& dataset = config.dataset().dataset_name();
  if (dataset == "jsonl" || dataset == "sharegpt") {
    LogWarning(absl::StrCat("--tokenizer ", config.dataset().tokenizer(), ": ", dataset,
                            " prompts are the dataset's own text and are sent as they are"));
    return payloads;
  }
  if (kind == surge::v1::TOKEN_COUNTER_SERVER && config.target().base_url().empty()) {
    // surge plan without a target: nothing is sent, the plan has no texts.
    LogInfo("--tokenizer server: no target to ask (no --base-url): prompts not fitted");
    return payloads;
  }
  const Clock::TimePoint start = clock.Now();
  absl::StatusOr<Counter> counter = MakeCounter(config, IsChatEndpoint(config.target().endpoint()));
  if (!counter.ok()) return counter.status();
  absl::StatusOr<PromptFitter> fitter = PromptFitter::Create(counter->counter.get());
  if (!fitter.ok()) return fitter.status();
  FitReport report;
  auto fitted =
      FitPayloads(std::move(payloads), config.num_prompts(), *fitter, kind, &report);
  if (!fitted.ok()) return fitted.status();
  const double seconds =
      std::chrono::duration<double>(clock.Now() - start).count();
  LogFit(counter->description, *fitter, report, seconds);
  return fitted;
}

}  // namespace surge::coordinator
