// Benchmark (not a test): the coordinator's record ingest.
// N synthetic records of streamed answers (128 output tokens: 127 ITL gaps
// each) arrive as the workers send them — RecordBatch messages of 64 records
// on the wire — and go through what `surge run` does with each: decode the
// batch, then the sink fan-out (details file flushed per record, the
// streaming summary, the actual page's send list). Prints records/s per
// stage, the summary's Finish time and the peak RSS: the targets are ingest
// ≥ 500,000 records/s and ≤ 500 MB RSS for 1,000,000 requests.
//
// Usage: record_ingest_bench [N=1000000] [out_dir=/tmp/surge_bench] [sinks=all|thread|summary]
// ("all": the details file written and flushed per record on the ingest
// thread; "thread": the details writer's own thread formats and writes it,
// as `surge run` does — the ingest figure then includes waiting for it to
// finish; "summary": no details file, to see the writer's share).
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/peak_rss.h"
#include "coordinator/results/record_sink.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"
#include "surge/v1/wire.pb.h"

using surge::bench::PeakRssMb;

namespace {

namespace fs = std::filesystem;
using surge::v1::RequestRecord;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A streamed answer of 128 tokens planned at 1,000 RPS: ~30 µs late, TTFT
// ~40 ms, ITL ~2 ms with jitter (deterministic, no RNG cost in the loop).
void FillRecord(uint64_t i, RequestRecord* r) {
  r->Clear();
  const int64_t planned_ns = static_cast<int64_t>(i) * 1'000'000;
  r->set_index(i);
  r->set_worker(static_cast<int32_t>(i % 2));
  r->set_status(surge::v1::OK);
  r->set_planned_ns(planned_ns);
  r->set_released_ns(planned_ns + 2'000);
  r->set_sent(true);
  r->set_sent_ns(planned_ns + 20'000 + static_cast<int64_t>(i % 97) * 200);
  r->set_http_status(200);
  r->set_ttft_ns(40'000'000 + static_cast<int64_t>(i % 1013) * 10'000);
  int64_t e2el = r->ttft_ns();
  for (int k = 0; k < 127; ++k) {
    const int64_t gap = 2'000'000 + static_cast<int64_t>((i * 131 + k * 7) % 401) * 1'000;
    r->add_itl_ns(gap);
    e2el += gap;
  }
  r->set_e2el_ns(e2el);
  r->set_ttfc_ns(r->ttft_ns());
  r->set_input_tokens(512 + i % 128);
  r->set_output_tokens(128);
  r->set_max_tokens(128);
  r->set_finish_reason("length");
}

class SendCount : public surge::coordinator::RecordSink {
 public:
  void Add(const RequestRecord& r) override { sends_.push_back({r.index(), r.sent_ns() * 1e-9}); }
  size_t size() const { return sends_.size(); }

 private:
  struct Send {
    uint64_t index;
    double sent_offset_s;
  };
  std::vector<Send> sends_;
};

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const fs::path out = argc > 2 ? fs::path(argv[2]) : fs::path("/tmp/surge_bench");
  const std::string which = argc > 3 ? argv[3] : "all";
  fs::create_directories(out);
  using Steady = std::chrono::steady_clock;
  auto seconds_since = [](Steady::time_point t) {
    return std::chrono::duration<double>(Steady::now() - t).count();
  };

  // The wire: batches of 64 encoded once per batch; decoding is measured.
  constexpr uint64_t kBatch = 64;
  surge::coordinator::DetailsWriterOptions details_options;
  details_options.writer_thread = which == "thread";
  auto details =
      surge::coordinator::DetailsWriter::Create(out / "bench_details.jsonl", details_options);
  if (!details.ok()) return 1;
  surge::coordinator::SummaryAccumulator summary;
  SendCount sends;
  surge::coordinator::RecordFanOut sinks;
  const bool with_details = which == "all" || which == "thread";
  if (with_details) sinks.Attach(details->get());
  sinks.Attach(&summary);
  sinks.Attach(&sends);

  surge::v1::RecordBatch batch, decoded;
  std::string wire;
  uint64_t wire_bytes = 0;
  double encode_s = 0, decode_s = 0, sink_s = 0;
  // CPU seconds besides wall seconds: on a shared machine the wall rate
  // says how busy the other jobs were, the CPU rate what one free core does.
  double ingest_cpu_s = 0;
  const double process_cpu_start_s = ProcessCpuSeconds();
  for (uint64_t first = 0; first < n; first += kBatch) {
    batch.Clear();
    for (uint64_t i = first; i < std::min(n, first + kBatch); ++i)
      FillRecord(i, batch.add_records());
    auto t = Steady::now();
    batch.SerializeToString(&wire);
    encode_s += seconds_since(t);
    wire_bytes += wire.size();
    const double cpu_before = ThreadCpuSeconds();
    t = Steady::now();
    if (!decoded.ParseFromString(wire)) return 1;
    decode_s += seconds_since(t);
    t = Steady::now();
    for (const RequestRecord& r : decoded.records()) sinks.Add(r);
    sink_s += seconds_since(t);
    ingest_cpu_s += ThreadCpuSeconds() - cpu_before;
  }
  // Everything on disk: the writer thread has finished (nothing to wait for
  // without it).
  auto t = Steady::now();
  if (!(*details)->Flush().ok()) return 1;
  const double drain_s = seconds_since(t);
  sink_s += drain_s;
  // Everything but the ingest thread's own ingest: the writer thread (and
  // the bench's record filling and encoding, on the main thread).
  const double main_thread_cpu_s = ThreadCpuSeconds();
  const double other_threads_cpu_s = ProcessCpuSeconds() - process_cpu_start_s - main_thread_cpu_s;
  t = Steady::now();
  const surge::coordinator::RunSummary s = summary.Finish();
  const double finish_s = seconds_since(t);
  const double nd = static_cast<double>(n);
  std::printf("records                        %llu (128 output tokens each, batches of %llu)\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(kBatch));
  std::printf("wire bytes per record          %.0f\n", static_cast<double>(wire_bytes) / nd);
  std::printf("encode (records/s)             %.0f\n", nd / encode_s);
  std::printf("decode (records/s)             %.0f\n", nd / decode_s);
  std::printf(
      "sinks: %-22s (records/s) %.0f  (of it %.3f s waiting for the details file at the end)\n",
      which == "all"      ? "details+summary+sends"
      : which == "thread" ? "details(thread)+summary+sends"
                          : "summary+sends",
      nd / sink_s, drain_s);
  std::printf("ingest, decode + sinks (rec/s) %.0f\n", nd / (decode_s + sink_s));
  std::printf("ingest thread CPU (us/record)  %.3f  (%.0f records per CPU-second)\n",
              ingest_cpu_s / nd * 1e6, nd / ingest_cpu_s);
  if (which == "thread") {
    std::printf("writer thread CPU (us/record)  %.3f  (%.0f records per CPU-second)\n",
                other_threads_cpu_s / nd * 1e6, nd / other_threads_cpu_s);
  }
  std::printf("summary Finish (s)             %.3f\n", finish_s);
  std::printf(
      "summary: %llu ok, ITL values %zu (exact: %s), TTFT p99 %.3f ms, lateness p99 %.3f ms\n",
      static_cast<unsigned long long>(s.succeeded), s.itl_s.count,
      s.itl_s.exact ? "yes" : "no, histogram", s.ttft_s.p99 * 1e3, s.lateness_s.p99 * 1e3);
  std::printf("sends kept                     %zu\n", sends.size());
  if (with_details) {
    std::printf("details file (MB)              %.1f\n",
                static_cast<double>(fs::file_size(out / "bench_details.jsonl")) / 1e6);
  }
  std::printf("peak RSS (MB)                  %.0f\n", PeakRssMb());
  return 0;
}
