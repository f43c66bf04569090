#include "coordinator/telemetry/server_scraper.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace surge::coordinator {

ServerMetricsScraper::ServerMetricsScraper(Clock& clock, std::string url,
                                           std::chrono::nanoseconds interval, ExpositionFetch fetch,
                                           ServerMetricsSink sink)
    : clock_(clock),
      url_(std::move(url)),
      interval_(interval),
      fetch_(std::move(fetch)),
      sink_(std::move(sink)),
      wake_(clock) {}

ServerMetricsScraper::~ServerMetricsScraper() { Stop(); }

void ServerMetricsScraper::Start() {
  start_ = clock_.Now();
  thread_ = clock_.StartThread([this] { Loop(); });
}

void ServerMetricsScraper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.Notify();
  if (thread_.joinable()) clock_.Join(thread_);
}

void ServerMetricsScraper::Loop() {
  for (int64_t k = 0;; k = NextIndex(k)) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.WaitUntil(
              lock, [this] { return stop_; }, start_ + k * interval_))
        return;
    }
    ScrapeOnce();
  }
}

int64_t ServerMetricsScraper::NextIndex(int64_t k) {
  const int64_t passed = (clock_.Now() - start_) / interval_;  // deadlines already due
  return std::max(k + 1, passed);
}

void ServerMetricsScraper::ScrapeOnce() {
  // Phase 1: the GET, timed on the coordinator's clock.
  const Clock::TimePoint sent = clock_.Now();
  absl::StatusOr<std::string> body = fetch_();
  const double scrape_ms = std::chrono::duration<double, std::milli>(clock_.Now() - sent).count();
  // Phase 2: the sample, with its rates from the last successful one.
  ServerMetricsSample sample =
      body.ok() ? SampleOfExposition(*body, ToNanos(sent))
                : FailedSample(ToNanos(sent), std::string(body.status().message()));
  sample.scrape_ms = scrape_ms;
  if (sample.ok) {
    if (last_ok_) AddRates(*last_ok_, sample);
    last_ok_ = sample;
    last_ok_->raw.clear();  // only the counters are needed
  } else if (!warned_) {
    // Phase 3: the first failure, once.
    warned_ = true;
    LogWarning(absl::StrCat("server metrics: ", url_, " ", sample.error,
                            "; scraping goes on, failures are counted in the summary"));
  }
  sink_(sample);
}

}  // namespace surge::coordinator
