// The progress line of a run.
#include "coordinator/results/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(ProgressTest, LineShowsCountsRateAndEta) {
  DispatchProgress p;
  p.elapsed_s = 10;
  p.planned = 1000;
  p.records = 480;
  p.sent = 490;
  p.ok = 478;
  p.inflight = 10;
  p.last_planned_s = 20;
  EXPECT_EQ(FormatProgress(p),
            "[   10.0 s] done 480/1000  ok 478  failed 2  in flight 10  sent 50.0 RPS  ETA 10 s");
  p.elapsed_s = 21;
  EXPECT_THAT(FormatProgress(p), ::testing::EndsWith("draining"));
  // After a stop, not-sent requests are not shown as failed.
  {
    DispatchProgress stopped = p;
    stopped.elapsed_s = 5;
    stopped.records = 300;
    stopped.ok = 3;
    stopped.not_sent = 272;
    stopped.stopping = true;
    EXPECT_EQ(FormatProgress(stopped),
              "[    5.0 s] done 300/1000  ok 3  failed 25  not sent 272  in flight 10  sent 100.0 "
              "RPS  stopping");
  }
  // Each worker's lateness over its last window.
  {
    DispatchProgress live = p;
    live.elapsed_s = 10;
    live.lateness = {{0, true, 500, 20000, 52000, 0}, {1, true, 480, 1500000, 23400000, 0}};
    EXPECT_EQ(FormatProgress(live),
              "[   10.0 s] done 480/1000  ok 478  failed 2  in flight 10  sent 50.0 RPS  late "
              "p50/p99 ms w0 0.02/0.05 w1 1.50/23  ETA 10 s");
    live.behind = true;
    EXPECT_THAT(FormatProgress(live), HasSubstr("w1 1.50/23  BEHIND  ETA 10 s"));
    // A stuck worker: nothing sent, its earliest queued request 40 ms overdue.
    live.lateness[1] = {1, true, 0, 0, 0, 40000000};
    EXPECT_THAT(FormatProgress(live), HasSubstr("w1 -/40"));
    // Many workers: the worst only.
    live.lateness.clear();
    for (int32_t k = 0; k < 6; ++k) {
      live.lateness.push_back({k, true, 100, 10000 * (k + 1), 30000 * (k == 4 ? 100 : 1), 0});
    }
    live.behind = false;
    EXPECT_THAT(FormatProgress(live), HasSubstr("late p50/p99 ms worst w4 0.05/3.00 (of 6)  ETA"));
    // Before any report: nothing.
    live.lateness = {{0, false, 0, 0, 0, 0}};
    EXPECT_EQ(FormatLateness(live.lateness, false), "");
  }
  // The reporter is a record sink; it counts the records
  // itself and shows them with the dispatcher's live part.
  {
    char* sink_text = nullptr;
    size_t sink_size = 0;
    std::FILE* sink_out = open_memstream(&sink_text, &sink_size);
    ProgressReporter sink(sink_out, /*terminal=*/false);
    surge::v1::RequestRecord r;
    r.set_status(surge::v1::OK);
    r.set_sent(true);
    sink.Add(r);
    r.set_status(surge::v1::FAILED);
    sink.Add(r);
    r.set_status(surge::v1::NOT_SENT);
    r.set_sent(false);
    sink.Add(r);
    DispatchProgress live;  // the dispatcher's snapshot: no record counts
    live.elapsed_s = 1;
    live.planned = 10;
    live.inflight = 2;
    live.last_planned_s = 5;
    sink.Update(live);
    std::fclose(sink_out);
    EXPECT_EQ(std::string(sink_text, sink_size),
              "[surge] progress [    1.0 s] done 3/10  ok 1  failed 1  not sent 1  in flight 2  "
              "sent 4.0 RPS  ETA 4 s\n");
    std::free(sink_text);
  }
  p.elapsed_s = 21;
  // Not a terminal: one line per period, not per update.
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  ProgressReporter reporter(out, /*terminal=*/false, /*plain_period_s=*/5);
  for (double t = 0; t < 12; t += 0.25) {
    p.elapsed_s = t;
    reporter.Update(p);
  }
  std::fclose(out);
  EXPECT_EQ(std::count(text, text + size, '\n'), 3);  // at 0, 5 and 10 s
  std::free(text);
}

}  // namespace
}  // namespace surge::coordinator
