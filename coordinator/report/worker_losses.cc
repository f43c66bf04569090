#include "coordinator/report/worker_losses.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge::coordinator {
namespace {

bool WellFormed(const nlohmann::json& loss) {
  return loss.is_object() && loss.contains("worker") && loss["worker"].is_number_integer() &&
         loss.contains("at_s") && loss["at_s"].is_number();
}

uint64_t Count(const nlohmann::json& loss, const char* key) {
  auto it = loss.find(key);
  return it != loss.end() && it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t{0};
}

// "52 send_unknown, 25 not sent, 3,010 moved<tail>".
std::string Counts(const nlohmann::json& loss, const char* moved_tail) {
  return absl::StrCat(FormatCount(Count(loss, "send_unknown")), " send_unknown, ",
                      FormatCount(Count(loss, "not_sent")), " not sent, ",
                      FormatCount(Count(loss, "reassigned")), " moved", moved_tail);
}

}  // namespace

nlohmann::json WorkerLossJson(int32_t worker, int64_t at_ns, std::string_view why,
                              uint64_t send_unknown, uint64_t not_sent, uint64_t reassigned) {
  return {{"worker", worker},
          {"at_s", std::round(static_cast<double>(at_ns) / 1e7) / 100},
          {"at_ns", at_ns},
          {"why", std::string(why)},
          {"send_unknown", send_unknown},
          {"not_sent", not_sent},
          {"reassigned", reassigned}};
}

std::string WorkerLossText(const nlohmann::json& loss) {
  if (!WellFormed(loss)) return "";
  const std::string why = loss.value("why", std::string());
  return absl::StrCat(absl::StrFormat("worker %d lost at %.2f s", loss["worker"].get<int64_t>(),
                                      loss["at_s"].get<double>()),
                      why.empty() ? "" : absl::StrCat(" (", why, ")"), ": ",
                      Counts(loss, " to the others"));
}

std::string WorkerLossLabel(const nlohmann::json& loss) {
  if (!WellFormed(loss)) return "";
  return absl::StrCat("worker ", loss["worker"].get<int64_t>(), " lost: ", Counts(loss, ""));
}

std::vector<RunEvent> WorkerLossEvents(const nlohmann::json& worker_losses) {
  std::vector<RunEvent> events;
  if (!worker_losses.is_array()) return events;
  for (const nlohmann::json& loss : worker_losses) {
    if (!WellFormed(loss)) continue;
    events.push_back({.at_s = loss["at_s"].get<double>(),
                      .label = WorkerLossLabel(loss),
                      .text = WorkerLossText(loss)});
  }
  return events;
}

}  // namespace surge::coordinator
