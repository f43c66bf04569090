#include "coordinator/results/progress.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace surge::coordinator {

std::string FormatProgress(const DispatchProgress& p) {
  const uint64_t sent = p.sent + p.inflight;
  const double rate = p.elapsed_s > 0 ? static_cast<double>(sent) / p.elapsed_s : 0;
  const double eta_s = p.last_planned_s - p.elapsed_s;
  const std::string eta = p.stopping  ? std::string("stopping")
                          : eta_s > 0 ? absl::StrFormat("ETA %.0f s", eta_s)
                                      : std::string("draining");
  // Not sent is not failed: after a stop most records are not_sent.
  const std::string not_sent =
      p.not_sent > 0 ? absl::StrFormat("  not sent %d", p.not_sent) : std::string();
  return absl::StrFormat(
      "[%7.1f s] done %d/%d  ok %d  failed %d%s  in flight %d  sent %.1f RPS  %s",
      std::max(p.elapsed_s, 0.0), p.records, p.planned, p.ok, p.records - p.ok - p.not_sent,
      not_sent, p.inflight, rate, eta);
}

void ProgressReporter::Update(const DispatchProgress& p) {
  if (terminal_) {
    std::fprintf(out_, "\r%s\033[K", FormatProgress(p).c_str());
    std::fflush(out_);
    dirty_ = true;
    return;
  }
  if (p.elapsed_s < next_plain_s_) return;
  next_plain_s_ = p.elapsed_s + plain_period_s_;
  std::fprintf(out_, "[surge] progress %s\n", FormatProgress(p).c_str());
  std::fflush(out_);
}

void ProgressReporter::Finish() {
  if (terminal_ && dirty_) std::fprintf(out_, "\n");
  dirty_ = false;
}

}  // namespace surge::coordinator
