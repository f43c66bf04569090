#include "coordinator/report/worker_losses.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

using surge::v1::WorkerLossFact;

// "52 send_unknown, 25 not sent, 3,010 moved<tail>".
std::string Counts(const WorkerLossFact& loss, const char* moved_tail) {
  return absl::StrCat(FormatCount(loss.send_unknown()), " send_unknown, ",
                      FormatCount(loss.not_sent()), " not sent, ", FormatCount(loss.reassigned()),
                      " moved", moved_tail);
}

}  // namespace

WorkerLossFact WorkerLossFactOf(int32_t worker, int64_t at_ns, std::string_view why,
                                uint64_t send_unknown, uint64_t not_sent, uint64_t reassigned) {
  WorkerLossFact loss;
  loss.set_worker(worker);
  loss.set_at_s(std::round(static_cast<double>(at_ns) / 1e7) / 100);
  loss.set_at_ns(at_ns);
  loss.set_why(std::string(why));
  loss.set_send_unknown(send_unknown);
  loss.set_not_sent(not_sent);
  loss.set_reassigned(reassigned);
  return loss;
}

std::string WorkerLossText(const WorkerLossFact& loss) {
  return absl::StrCat(absl::StrFormat("worker %d lost at %.2f s", loss.worker(), loss.at_s()),
                      loss.why().empty() ? "" : absl::StrCat(" (", loss.why(), ")"), ": ",
                      Counts(loss, " to the others"));
}

std::string WorkerLossLabel(const WorkerLossFact& loss) {
  return absl::StrCat("worker ", loss.worker(), " lost: ", Counts(loss, ""));
}

std::vector<RunEvent> WorkerLossEvents(const WorkerLossFacts& worker_losses) {
  std::vector<RunEvent> events;
  for (const WorkerLossFact& loss : worker_losses) {
    events.push_back(
        {.at_s = loss.at_s(), .label = WorkerLossLabel(loss), .text = WorkerLossText(loss)});
  }
  return events;
}

}  // namespace surge::coordinator
