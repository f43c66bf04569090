#include "coordinator/dataset/fitted_payloads.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/prompt_builder.h"

namespace surge::coordinator {
namespace {

// The place of a Mooncake block's text in the corpus (BuildAssignmentPrompt).
constexpr uint64_t kBlockSeedFactor = 104729;

// The fitted prompts, on top of the source they came from.
class FittedSource final : public PayloadSource {
 public:
  FittedSource(std::unique_ptr<PayloadSource> base, surge::v1::TokenCounter counter)
      : base_(std::move(base)), counter_(counter) {}

  Payload At(uint64_t index) const override {
    Payload payload = base_->At(index);
    const Fitted& f = fitted_[index];
    if (!f.fitted) return payload;
    std::string text;
    for (uint32_t part : f.parts) {
      if (!text.empty()) text.push_back(' ');
      text += shared_[part].text;
    }
    if (!text.empty() && !f.own.empty()) text.push_back(' ');
    text += f.own;
    payload.prompt_text = std::move(text);
    return payload;
  }
  const std::string& name() const override { return base_->name(); }
  const std::vector<std::string>& warnings() const override { return base_->warnings(); }
  const std::vector<double>* replay_offsets_s() const override {
    return base_->replay_offsets_s();
  }
  PromptSizing Sizing(uint64_t index) const override {
    const Fitted& f = fitted_[index];
    if (!f.fitted) return base_->Sizing(index);
    return PromptSizing{f.asked_input_tokens, counter_};
  }

  // Fits every prompt; see FitPayloads.
  absl::Status FitAll(uint64_t n, PromptFitter& fitter, FitReport* report) {
    fitted_.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      const Payload payload = base_->At(i);
      if (!payload.prompt_text.empty()) continue;  // a real prompt: not sized by surge
      absl::Status s = payload.prefix_tokens > 0           ? FitWithPrefix(payload, fitter, i)
                       : !payload.prefix_block_ids.empty() ? FitWithBlocks(payload, fitter, i)
                                                           : FitAlone(payload, fitter, i);
      if (!s.ok()) return s;
      ++report->fitted_prompts;
      report->text_bytes += fitted_[i].own.size();
    }
    report->shared_texts = shared_.size();
    for (const FittedText& t : shared_) report->text_bytes += t.text.size();
    report->stats = fitter.stats();
    return absl::OkStatus();
  }

 private:
  struct Fitted {
    bool fitted = false;
    uint32_t asked_input_tokens = 0;
    std::vector<uint32_t> parts;  // shared texts first, in order
    std::string own;              // the request's own words after them
  };

  absl::Status Store(uint64_t i, const Payload& payload, const std::string& head,
                     std::vector<uint32_t> parts, absl::StatusOr<FittedText> whole) {
    if (!whole.ok()) return whole.status();
    Fitted& f = fitted_[i];
    f.fitted = true;
    f.asked_input_tokens = payload.input_tokens;
    f.parts = std::move(parts);
    // The whole text is the head, a space and the own words (or the head).
    f.own = whole->text.size() > head.size() + 1 && !head.empty() ? whole->text.substr(head.size() + 1)
            : head.empty()                                        ? std::move(whole->text)
                                                                  : std::string();
    return absl::OkStatus();
  }

  absl::Status FitAlone(const Payload& payload, PromptFitter& fitter, uint64_t i) {
    return Store(i, payload, "", {},
                 fitter.FitPrompt("", 0, payload.prompt_seed, payload.input_tokens));
  }

  // The shared text of `key`, fitted on first use. Errors: the counter's.
  absl::StatusOr<uint32_t> Shared(std::map<std::pair<uint64_t, uint32_t>, uint32_t>& cache,
                                  std::pair<uint64_t, uint32_t> key, uint64_t first_word,
                                  PromptFitter& fitter) {
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    absl::StatusOr<FittedText> text = fitter.FitText(first_word, key.second);
    if (!text.ok()) return text.status();
    const auto index = static_cast<uint32_t>(shared_.size());
    shared_.push_back(*std::move(text));
    cache.emplace(key, index);
    return index;
  }

  absl::Status FitWithPrefix(const Payload& payload, PromptFitter& fitter, uint64_t i) {
    absl::StatusOr<uint32_t> prefix =
        Shared(prefixes_, {payload.prefix_seed, payload.prefix_tokens}, payload.prefix_seed, fitter);
    if (!prefix.ok()) return prefix.status();
    const FittedText& head = shared_[*prefix];
    return Store(i, payload, head.text, {*prefix},
                 fitter.FitPrompt(head.text, head.tokens, payload.prompt_seed, payload.input_tokens));
  }

  absl::Status FitWithBlocks(const Payload& payload, PromptFitter& fitter, uint64_t i) {
    int64_t left = static_cast<int64_t>(payload.input_tokens) - fitter.empty_prompt_tokens();
    std::vector<uint32_t> parts;
    std::string head;
    uint32_t head_tokens = 0;
    uint64_t tail_start = payload.prompt_seed;
    for (uint64_t id : payload.prefix_block_ids) {
      if (left <= 0) break;
      if (left < static_cast<int64_t>(kPrefixBlockTokens)) {
        tail_start = id * kBlockSeedFactor;  // the last, partial block
        break;
      }
      absl::StatusOr<uint32_t> block =
          Shared(blocks_, {id, kPrefixBlockTokens}, id * kBlockSeedFactor, fitter);
      if (!block.ok()) return block.status();
      const FittedText& text = shared_[*block];
      if (!head.empty()) head.push_back(' ');
      head += text.text;
      head_tokens += text.tokens;
      left -= text.tokens;
      parts.push_back(*block);
    }
    return Store(i, payload, head, std::move(parts),
                 fitter.FitPrompt(head, head_tokens, tail_start, payload.input_tokens));
  }

  std::unique_ptr<PayloadSource> base_;
  surge::v1::TokenCounter counter_;
  std::vector<Fitted> fitted_;
  std::vector<FittedText> shared_;
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> prefixes_;
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> blocks_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PayloadSource>> FitPayloads(std::unique_ptr<PayloadSource> base,
                                                           uint64_t num_requests,
                                                           PromptFitter& fitter,
                                                           surge::v1::TokenCounter counter,
                                                           FitReport* report) {
  auto source = std::make_unique<FittedSource>(std::move(base), counter);
  FitReport local;
  if (absl::Status s = source->FitAll(num_requests, fitter, report ? report : &local); !s.ok()) {
    return s;
  }
  return source;
}

}  // namespace surge::coordinator
