// The one warning of a run whose server redirects: surge does not follow a
// 3xx answer (a redirected request is not the request that was planned and
// timed), so each such request fails with http_3xx; the first one's record
// is enough to say where the server points and what to change.
#ifndef SURGE_COORDINATOR_RESULTS_REDIRECT_NOTICE_H_
#define SURGE_COORDINATOR_RESULTS_REDIRECT_NOTICE_H_

#include <functional>
#include <optional>
#include <string>

#include "coordinator/results/record_sink.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// The warning for `record` when it is a failed 3xx answer, else nullopt:
// its error text (with the Location when the server sent one) and the
// options to change — --base-url and --endpoint set from an absolute
// Location, --endpoint from a path, otherwise both in general terms.
// Pure.
std::optional<std::string> RedirectWarning(const surge::v1::RequestRecord& record);

// A record sink that passes the first RedirectWarning of a run to `warn`
// (LogWarning by default) and counts the redirected records; later ones
// are not warned again. Not thread-safe; used from the dispatcher thread.
class RedirectNotice : public RecordSink {
 public:
  using Warn = std::function<void(const std::string&)>;
  explicit RedirectNotice(Warn warn = nullptr);
  void Add(const surge::v1::RequestRecord& record) override;
  // Failed 3xx records seen so far.
  uint64_t redirected() const { return redirected_; }

 private:
  Warn warn_;
  uint64_t redirected_ = 0;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_REDIRECT_NOTICE_H_
