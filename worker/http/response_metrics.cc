#include "worker/http/response_metrics.h"

#include "common/prompt_builder.h"

namespace surge::worker {

void ResponseMetrics::OnContentEvent(int64_t now_ns, size_t content_bytes, bool has_answer) {
  content_bytes_ += content_bytes;
  if (has_answer && !has_answer_) {
    has_answer_ = true;
    first_answer_ns_ = now_ns;
  }
  if (content_events_ == 0) {
    first_content_ns_ = now_ns;
  } else {
    itl_ns_.push_back(now_ns - last_content_ns_);
  }
  last_content_ns_ = now_ns;
  ++content_events_;
}

void ResponseMetrics::OnWholeAnswer(int64_t now_ns, size_t content_bytes, bool has_answer) {
  content_bytes_ = content_bytes;
  has_answer_ = has_answer;
  first_answer_ns_ = now_ns;
  first_content_ns_ = now_ns;
  last_content_ns_ = now_ns;
  content_events_ = 1;
}

void ResponseMetrics::FillRecord(uint32_t estimated_input_tokens,
                                 surge::v1::RequestRecord& record) const {
  record.set_sent_ns(sent_ns_);
  record.set_ttft_ns(content_events_ > 0 ? first_content_ns_ - sent_ns_ : 0);
  record.set_ttfc_ns(has_answer_ ? first_answer_ns_ - sent_ns_ : 0);
  record.set_finish_reason(finish_reason_);
  record.set_e2el_ns(last_byte_ns_ > 0 ? last_byte_ns_ - sent_ns_ : 0);
  record.clear_itl_ns();
  for (int64_t gap : itl_ns_) record.add_itl_ns(gap);
  if (usage_.has_value()) {
    record.set_output_tokens(usage_->completion_tokens);
    record.set_output_tokens_estimated(false);
    record.set_input_tokens(usage_->prompt_tokens > 0 ? usage_->prompt_tokens
                                                      : estimated_input_tokens);
    record.set_cached_tokens(usage_->cached_tokens.value_or(0));
    record.set_cached_tokens_reported(usage_->cached_tokens.has_value());
    record.set_input_tokens_estimated(usage_->prompt_tokens == 0);
  } else {
    record.set_output_tokens(EstimateTokensForBytes(content_bytes_));
    record.set_output_tokens_estimated(true);
    record.set_input_tokens(estimated_input_tokens);
    record.set_input_tokens_estimated(true);
  }
}

bool IsShortOutput(const surge::v1::RequestRecord& record, bool ignore_eos) {
  if (!ignore_eos || record.status() != surge::v1::OK || record.max_tokens() == 0) return false;
  if (!record.output_tokens_estimated() && record.output_tokens() < record.max_tokens()) {
    return true;
  }
  return !record.finish_reason().empty() && record.finish_reason() != "length";
}

}  // namespace surge::worker
