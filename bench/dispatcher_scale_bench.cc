// Scale in simulation (R-DIST-3, R-DIST-5): the real
// Dispatcher with W scripted workers (tests/testing/scripted_worker.h) on the
// in-memory transport and simulated time (AutoAdvanceClock), at R requests/s
// aggregate for S simulated seconds. Measures the coordinator's CPU per
// request, the message rates and sizes, and whether assignment and record
// ingest keep up. Results: docs/DESIGN.md "Scale".
//
// Usage: dispatcher_scale_bench [--workers 64] [--rps 100000] [--seconds 10]
//                               [--assign round-robin|least-loaded|both]
//                               [--itl-values 127]  (0: minimal records)
//
// CPU accounting: everything runs on one thread (the router runs the workers'
// Step before each dispatcher receive). coordinator CPU = process CPU during
// Dispatcher::Run (CLOCK_PROCESS_CPUTIME_ID) - the CPU spent inside the
// workers' Step calls (CLOCK_THREAD_CPUTIME_ID around the step loop). The
// workers' share includes their Receive (parse of assignments, acks) and
// Send (serialize of records, heartbeats) of the in-memory transport; the
// coordinator's share includes its own parse and serialize, the ledger, the
// policy and the record sink (a counter here, no file writes). The two
// clock reads per step (about 2 x 0.1-0.5 us) are counted on the workers'
// side.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/dispatch/dispatcher.h"
#include "coordinator/plan/arrival_schedule.h"
#include "coordinator/plan/traffic.h"
#include "tests/testing/in_memory_transport.h"
#include "tests/testing/scripted_worker.h"
#include "tests/testing/simulated_clock.h"

namespace surge::coordinator {
namespace {

using surge::testing::AutoAdvanceClock;
using surge::testing::InMemoryRouter;
using surge::testing::ScriptedWorker;

double CpuSeconds(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Synthetic payloads as `surge run` makes them: input 1024, max_tokens 128,
// a 64-bit prompt seed (so the assignment's size is a real one).
class SyntheticPayloads final : public PayloadSource {
 public:
  Payload At(uint64_t index) const override {
    return Payload{1024, 128, (index + 1) * 0x9E3779B97F4A7C15ull};
  }
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

 private:
  std::string name_ = "synthetic";
  std::vector<std::string> warnings_;
};

struct Result {
  std::string assign;
  uint64_t planned = 0;
  uint64_t records = 0;
  uint64_t unique = 0;
  uint64_t ok = 0;
  uint64_t rejected = 0;
  uint64_t lost = 0;
  double sim_s = 0;          // t0 .. end of Run, simulated
  double process_cpu_s = 0;  // during Run
  double worker_cpu_s = 0;   // inside the workers' Step
  uint64_t steps = 0;
  uint64_t assignment_batches = 0, assignment_bytes = 0;
  uint64_t record_batches = 0, record_bytes = 0;
  uint64_t heartbeats = 0;
  int64_t min_lead_ns = INT64_MAX;
  int64_t max_ingest_lag_ns = 0;  // record sink time - sent_ns, simulated
  int64_t max_late_ns = 0;        // sent_ns - planned_ns, simulated
};

Result RunOnce(int num_workers, double rate_rps, double seconds, AssignPolicyKind kind,
               int itl_values) {
  Result res;
  res.assign = kind == AssignPolicyKind::kLeastLoaded ? "least-loaded" : "round-robin";
  const auto n = static_cast<uint64_t>(rate_rps * seconds);
  ResolvedTraffic t;
  t.request_rate_rps = t.target_rate_rps = rate_rps;
  const ArrivalSchedule plan = *BuildArrivalSchedule(t, n, 0);
  res.planned = n;

  AutoAdvanceClock clock(Clock::TimePoint(std::chrono::seconds(1000)));
  InMemoryRouter router(clock);
  SyntheticPayloads payloads;
  std::vector<std::unique_ptr<ScriptedWorker>> workers;
  for (int k = 0; k < num_workers; ++k) {
    workers.push_back(std::make_unique<ScriptedWorker>(clock, router.Connect(absl::StrCat("w", k)),
                                                       static_cast<int32_t>(k)));
    workers.back()->set_record_itl_values(itl_values);
  }
  double worker_cpu_s = 0;
  clock.set_world([&] {
    const double a = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    for (auto& w : workers) w->Step();
    worker_cpu_s += CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - a;
    ++res.steps;
  });
  DispatcherOptions options;
  options.num_workers = num_workers;
  options.run_id = "scale";
  options.start_lead = std::chrono::milliseconds(100);
  options.assign = kind;
  options.hello_timeout = std::chrono::milliseconds(60000);
  std::vector<bool> seen(n, false);
  // max over records of (sink time - sent_ns), absolute; t0 subtracted after Run.
  int64_t max_sink_minus_sent_ns = INT64_MIN;
  Dispatcher dispatcher(clock, router, plan, payloads, options,
                        [&](const surge::v1::RequestRecord& r) {
                          ++res.records;
                          if (r.index() < n && !seen[r.index()]) {
                            seen[r.index()] = true;
                            ++res.unique;
                          }
                          if (r.status() == surge::v1::OK) ++res.ok;
                          max_sink_minus_sent_ns =
                              std::max(max_sink_minus_sent_ns, ToNanos(clock.Now()) - r.sent_ns());
                          res.max_late_ns = std::max(res.max_late_ns, r.sent_ns() - r.planned_ns());
                        });
  const double cpu0 = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  auto outcome = dispatcher.Run();
  res.process_cpu_s = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  res.worker_cpu_s = worker_cpu_s;
  if (!outcome.ok()) {
    std::fprintf(stderr, "run failed: %s\n", std::string(outcome.status().message()).c_str());
    std::exit(1);
  }
  res.max_ingest_lag_ns = max_sink_minus_sent_ns - outcome->t0_ns;
  res.rejected = outcome->rejected_records;
  res.lost = outcome->send_unknown + outcome->records_lost_in_transit;
  res.sim_s = static_cast<double>(ToNanos(clock.Now()) - outcome->t0_ns) * 1e-9;
  for (const auto& w : workers) {
    res.assignment_batches += w->assignment_batches();
    res.assignment_bytes += w->assignment_bytes();
    res.record_batches += w->record_batches();
    res.record_bytes += w->record_bytes();
    res.heartbeats += w->heartbeats();
    res.min_lead_ns = std::min(res.min_lead_ns, w->min_lead_ns());
  }
  return res;
}

// Serialized sizes of the messages of a real run (not the scripted ones,
// whose records carry no timings): a streamed 128-token answer's record and
// a heartbeat with its clock report, each in its Envelope.
void PrintRealMessageSizes() {
  surge::v1::Envelope rec_env;
  rec_env.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  rec_env.set_run_id("0123456789abcdef");
  rec_env.set_seq(123456);
  auto* batch = rec_env.mutable_record_batch();
  batch->set_batch_seq(4567);
  for (int k = 0; k < 256; ++k) {
    auto* r = batch->add_records();
    r->set_index(500000 + k);
    r->set_worker(37);
    r->set_planned_ns(int64_t{5'000'000'000} + k * 10'000);
    r->set_released_ns(r->planned_ns() + 40'000);
    r->set_sent_ns(r->planned_ns() + 90'000);
    r->set_status(surge::v1::OK);
    r->set_ttft_ns(180'000'000);
    r->set_ttfc_ns(181'000'000);
    r->set_e2el_ns(180'000'000 + int64_t{127} * 21'000'000);
    r->set_output_tokens(128);
    r->set_input_tokens(1024);
    r->set_max_tokens(128);
    r->set_http_status(200);
    r->set_finish_reason("length");
    r->set_sent(true);
    r->set_released(true);
    for (int i = 0; i < 127; ++i) r->add_itl_ns(19'000'000 + (i * 7919) % 4'000'000);
  }
  const double per_record_itl = static_cast<double>(rec_env.ByteSizeLong()) / 256;
  for (auto& r : *batch->mutable_records()) r.clear_itl_ns();
  const double per_record_no_itl = static_cast<double>(rec_env.ByteSizeLong()) / 256;
  surge::v1::Envelope hb;
  hb.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  hb.set_run_id("0123456789abcdef");
  hb.set_seq(123456);
  auto* h = hb.mutable_heartbeat();
  h->set_hb_seq(2400);
  h->set_t1_worker_ns(1'700'000'000'000'000'000);
  h->set_inflight(300);
  h->set_queued(3000);
  h->set_horizon_ns(12'000'000'000);
  auto* c = h->mutable_clock();
  c->set_offset_ns(250'123'456);
  c->set_drift_ppm(12.5);
  c->set_uncertainty_ns(40'000);
  c->set_ref_coord_ns(1'700'000'000'000'000'000);
  c->set_samples(2400);
  c->set_rejected(12);
  c->set_min_rtt_ns(80'000);
  c->set_largest_step_ns(30'000);
  c->set_drift_fitted(true);
  surge::v1::Envelope ack;
  ack.set_protocol_version(surge::v1::PROTOCOL_VERSION_CURRENT);
  ack.set_run_id("0123456789abcdef");
  ack.set_seq(123456);
  auto* a = ack.mutable_heartbeat_ack();
  a->set_hb_seq(2400);
  a->set_t1_worker_ns(1'700'000'000'000'000'000);
  a->set_t2_coord_ns(1'700'000'000'000'000'000);
  a->set_t3_coord_ns(1'700'000'000'000'100'000);
  std::printf(
      "real-run message sizes (serialized Envelope): record of a streamed 128-token answer "
      "%.0f B (%.0f B without the 127 ITL values), heartbeat %zu B, heartbeat ack %zu B\n",
      per_record_itl, per_record_no_itl, hb.ByteSizeLong(), ack.ByteSizeLong());
}

void Print(const Result& r, int workers, double rps) {
  const double coord_cpu_s = r.process_cpu_s - r.worker_cpu_s;
  const double us_per_req = coord_cpu_s / static_cast<double>(r.planned) * 1e6;
  const bool all_in = r.records == r.planned && r.unique == r.planned && r.ok == r.planned &&
                      r.rejected == 0 && r.lost == 0;
  std::printf("\n== %d workers, %.0f RPS, --assign %s ==\n", workers, rps, r.assign.c_str());
  std::printf("%-44s %s\n", "quantity", "value");
  std::printf("%-44s %llu / %llu (unique %llu, ok %llu, rejected %llu, lost %llu)\n",
              "records in / planned", static_cast<unsigned long long>(r.records),
              static_cast<unsigned long long>(r.planned), static_cast<unsigned long long>(r.unique),
              static_cast<unsigned long long>(r.ok), static_cast<unsigned long long>(r.rejected),
              static_cast<unsigned long long>(r.lost));
  std::printf("%-44s %.3f s\n", "simulated time t0..end", r.sim_s);
  std::printf("%-44s %.3f s (workers' Step %.3f s, %llu steps)\n", "process CPU during Run",
              r.process_cpu_s, r.worker_cpu_s, static_cast<unsigned long long>(r.steps));
  std::printf("%-44s %.3f s = %.2f us/request\n", "coordinator CPU", coord_cpu_s, us_per_req);
  std::printf("%-44s %.0f%% of one core\n", "coordinator load at this rate",
              100.0 * coord_cpu_s / r.sim_s);
  std::printf("%-44s %.0f records/s\n", "one-thread capacity (1 / CPU per request)",
              1e6 / us_per_req);
  std::printf("%-44s %.0f /s (%.0f B each, %.1f B/assignment)\n", "assignment batches",
              static_cast<double>(r.assignment_batches) / r.sim_s,
              static_cast<double>(r.assignment_bytes) / static_cast<double>(r.assignment_batches),
              static_cast<double>(r.assignment_bytes) / static_cast<double>(r.planned));
  std::printf("%-44s %.0f /s (%.0f records each, %.1f B/record)\n", "record batches",
              static_cast<double>(r.record_batches) / r.sim_s,
              static_cast<double>(r.planned) / static_cast<double>(r.record_batches),
              static_cast<double>(r.record_bytes) / static_cast<double>(r.planned));
  std::printf("%-44s %.0f /s\n", "heartbeats", static_cast<double>(r.heartbeats) / r.sim_s);
  std::printf("%-44s %.0f records/s\n", "records ingested (simulated time)",
              static_cast<double>(r.records) / r.sim_s);
  std::printf("%-44s %.1f ms (lookahead 2000 ms)\n", "min lead: planned send - assignment arrival",
              static_cast<double>(r.min_lead_ns) * 1e-6);
  std::printf("%-44s %.1f ms\n", "max record ingest lag (sink - sent)",
              static_cast<double>(r.max_ingest_lag_ns) * 1e-6);
  std::printf("%-44s %.1f ms (the simulated steps' granularity)\n", "max send lateness",
              static_cast<double>(r.max_late_ns) * 1e-6);
  const bool keeps_up = all_in && r.min_lead_ns > 500'000'000 && coord_cpu_s < r.sim_s;
  std::printf("%-44s %s\n", "keeps up (all in, lead > 500 ms, CPU < 1 core)",
              keeps_up ? "yes" : "NO");
}

}  // namespace
}  // namespace surge::coordinator

int main(int argc, char** argv) {
  int workers = 64;
  double rps = 100000, seconds = 10;
  std::string assign = "both";
  int itl_values = 127;  // records of a streamed 128-token answer
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--workers") {
      workers = std::atoi(argv[i + 1]);
    } else if (flag == "--rps") {
      rps = std::atof(argv[i + 1]);
    } else if (flag == "--seconds") {
      seconds = std::atof(argv[i + 1]);
    } else if (flag == "--itl-values") {
      itl_values = std::atoi(argv[i + 1]);
    } else if (flag == "--assign") {
      assign = argv[i + 1];
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (workers < 1 || rps <= 0 || seconds <= 0 || itl_values < 0 ||
      !(assign == "both" || assign == "round-robin" || assign == "least-loaded")) {
    std::fprintf(stderr,
                 "usage: dispatcher_scale_bench [--workers N>=1] [--rps R>0] [--seconds S>0] "
                 "[--assign round-robin|least-loaded|both] [--itl-values N>=0]\n");
    return 2;
  }
  using surge::coordinator::AssignPolicyKind;
  surge::coordinator::PrintRealMessageSizes();
  if (assign != "least-loaded") {
    surge::coordinator::Print(surge::coordinator::RunOnce(
                                  workers, rps, seconds, AssignPolicyKind::kRoundRobin, itl_values),
                              workers, rps);
  }
  if (assign != "round-robin") {
    surge::coordinator::Print(
        surge::coordinator::RunOnce(workers, rps, seconds, AssignPolicyKind::kLeastLoaded,
                                    itl_values),
        workers, rps);
  }
  return 0;
}
