// Benchmark (not a test): the planned prefix reuse of `surge run`/`surge
// plan` (coordinator/dataset/prefix_reuse.h) for the repository's Mooncake
// trace (12,031 lines, 512-token hash_ids, counted at 16-token blocks) and
// for 10^6 synthetic requests with 4 prefixes of 512 tokens. Each case runs
// in a forked child, so its peak RSS is its own. Results go to
// docs/DATASETS.md. Usage: prefix_reuse_bench [trace=data/traces/...jsonl] [N=1000000]
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/peak_rss.h"
#include "common/clock.h"
#include "coordinator/dataset/payload_source.h"
#include "coordinator/dataset/prefix_reuse.h"

using surge::bench::PeakRssMb;

namespace {

// Reads the payloads (timed apart), then their planned reuse; prints one line.
int RunCase(const char* name, const surge::v1::DatasetConfig& dataset, uint64_t n) {
  surge::Clock& clock = surge::RealClock();
  auto seconds_since = [&clock](surge::Clock::TimePoint t) {
    return std::chrono::duration<double>(clock.Now() - t).count();
  };
  const double rss_start = PeakRssMb();
  auto t = clock.Now();
  auto source = surge::coordinator::MakePayloadSource(dataset, n, 0);
  if (!source.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, std::string(source.status().message()).c_str());
    return 1;
  }
  const double read_s = seconds_since(t);
  const double rss_read = PeakRssMb();
  t = clock.Now();
  auto reuse = surge::coordinator::PlanPrefixReuse(**source, n, dataset.prefix_block_tokens());
  const double reuse_s = seconds_since(t);
  if (!reuse.has_value()) return 1;
  std::printf(
      "%-28s requests %8llu  read %7.3f s  planned reuse %7.3f s (%6.3f us/request)  "
      "reuse %.4f  peak RSS %.1f MB (%.1f before, %.1f after reading)\n",
      name, static_cast<unsigned long long>(n), read_s, reuse_s, reuse_s * 1e6 / n, reuse->share(),
      PeakRssMb(), rss_start, rss_read);
  return 0;
}

int InChild(const char* name, const surge::v1::DatasetConfig& dataset, uint64_t n) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int code = RunCase(name, dataset, n);
    std::fflush(stdout);
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string trace = argc > 1 ? argv[1] : "data/traces/mooncake_conversation_trace.jsonl";
  const uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  surge::v1::DatasetConfig mooncake;
  mooncake.set_dataset_name("mooncake");
  mooncake.set_dataset_path(trace);
  mooncake.set_prefix_block_tokens(16);
  int failed = InChild("mooncake trace, block 16", mooncake, 12031);
  mooncake.set_prefix_block_tokens(512);
  failed |= InChild("mooncake trace, block 512", mooncake, 12031);
  surge::v1::DatasetConfig synthetic;
  synthetic.set_dataset_name("synthetic");
  synthetic.set_random_input_len(128);
  synthetic.set_random_output_len(16);
  synthetic.set_random_prefix_len(512);
  synthetic.set_random_prefix_groups(4);
  synthetic.set_prefix_block_tokens(16);
  failed |= InChild("synthetic 4 x 512, block 16", synthetic, n);
  return failed;
}
