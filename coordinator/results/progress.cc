#include "coordinator/results/progress.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace surge::coordinator {

std::string FormatLateness(const std::vector<WorkerLateness>& workers, bool behind) {
  std::vector<const WorkerLateness*> shown;
  for (const WorkerLateness& w : workers) {
    if (w.reported) shown.push_back(&w);
  }
  if (shown.empty()) return "";
  auto ms = [](int64_t ns) {
    const double v = static_cast<double>(ns) / 1e6;
    return v < 10 ? absl::StrFormat("%.2f", v) : absl::StrFormat("%.0f", v);
  };
  auto one = [&ms](const WorkerLateness& w) {
    return absl::StrCat(" w", w.worker, " ", w.sends > 0 ? ms(w.p50_ns) : "-", "/",
                        w.sends > 0 ? ms(std::max(w.p99_ns, w.overdue_ns)) : ms(w.overdue_ns));
  };
  std::string out = "  late p50/p99 ms";
  if (shown.size() <= 4) {
    for (const WorkerLateness* w : shown) out += one(*w);
  } else {
    const WorkerLateness* worst = *std::max_element(
        shown.begin(), shown.end(), [](const WorkerLateness* a, const WorkerLateness* b) {
          return std::max(a->p99_ns, a->overdue_ns) < std::max(b->p99_ns, b->overdue_ns);
        });
    absl::StrAppend(&out, " worst", one(*worst), " (of ", shown.size(), ")");
  }
  if (behind) out += "  BEHIND";
  return out;
}

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
      "[%7.1f s] done %d/%d  ok %d  failed %d%s  in flight %d  sent %.1f RPS%s  %s",
      std::max(p.elapsed_s, 0.0), p.records, p.planned, p.ok, p.records - p.ok - p.not_sent,
      not_sent, p.inflight, rate, FormatLateness(p.lateness, p.behind), eta);
}

void ProgressReporter::Add(const surge::v1::RequestRecord& r) {
  if (r.warmup()) return;  // the progress counts the plan's requests
  ++records_;
  sent_ += r.sent();
  ok_ += r.status() == surge::v1::OK;
  not_sent_ += r.status() == surge::v1::NOT_SENT;
}

void ProgressReporter::Update(const DispatchProgress& live) {
  DispatchProgress p = live;
  p.records = records_;
  p.sent = sent_;
  p.ok = ok_;
  p.not_sent = not_sent_;
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
