// The server telemetry's scraper (docs/METRICS.md "Server telemetry"): on
// a thread of its own, GETs the server's /metrics at absolute deadlines
// t_k = start + k · interval on the coordinator's clock, maps each answer
// (server_metrics.h) and hands every attempt, failed ones too, to a sink.
// A slow scrape delays only the next one, by its overrun; later deadlines
// stay where they were. The first failure is logged once (a WARNING naming
// the URL and why); the run never stops for a scrape.
#ifndef SURGE_COORDINATOR_TELEMETRY_SERVER_SCRAPER_H_
#define SURGE_COORDINATOR_TELEMETRY_SERVER_SCRAPER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "coordinator/telemetry/server_metrics.h"

namespace surge::coordinator {

// One GET of the exposition: the body of a 200 answer, else UNAVAILABLE
// with the reason ("answered 404", "connect: Connection refused", ...). It
// bounds its own time (the scraper passes no deadline).
using ExpositionFetch = std::function<absl::StatusOr<std::string>()>;

// Receives each attempt, rates set, on the scraper's thread.
using ServerMetricsSink = std::function<void(const ServerMetricsSample&)>;

class ServerMetricsScraper {
 public:
  // `url` names the source in the warning.
  ServerMetricsScraper(Clock& clock, std::string url, std::chrono::nanoseconds interval,
                       ExpositionFetch fetch, ServerMetricsSink sink);
  ~ServerMetricsScraper();  // Stop()
  ServerMetricsScraper(const ServerMetricsScraper&) = delete;
  ServerMetricsScraper& operator=(const ServerMetricsScraper&) = delete;

  // The first scrape at once (t_0 = now), then every interval.
  void Start();
  // Ends the wait for the next deadline, lets a GET under way finish (it is
  // bounded by its own timeout) and joins the thread. Idempotent.
  void Stop();

 private:
  void Loop();
  void ScrapeOnce();
  // The index of the next deadline after attempt k: k + 1, or the last
  // deadline already passed when the scrape overran more than one interval.
  int64_t NextIndex(int64_t k);

  Clock& clock_;
  const std::string url_;
  const std::chrono::nanoseconds interval_;
  ExpositionFetch fetch_;
  ServerMetricsSink sink_;
  Clock::TimePoint start_;
  std::optional<ServerMetricsSample> last_ok_;
  bool warned_ = false;
  std::mutex mu_;
  ClockCondition wake_;
  bool stop_ = false;  // under mu_
  std::thread thread_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_TELEMETRY_SERVER_SCRAPER_H_
