#include "worker/pacer_thread.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace surge::worker {

std::string ConfigurePacerThread(const PacerThreadOptions& options) {
  std::string refused;
  auto add = [&refused](const std::string& sentence) {
    absl::StrAppend(&refused, refused.empty() ? "" : " ", sentence);
  };
  if (options.timer_slack_ns > 0 &&
      prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(options.timer_slack_ns), 0, 0, 0) != 0) {
    add(absl::StrCat("pacer timer slack ", options.timer_slack_ns,
                     " ns refused: ", std::strerror(errno), "."));
  }
  if (options.cpu >= 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (options.cpu >= CPU_SETSIZE || options.cpu >= online) {
      add(absl::StrCat("pacer_cpu ", options.cpu, " ignored: this machine has CPUs 0..", online - 1,
                       "."));
    } else {
      CPU_SET(options.cpu, &set);
      if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0) {
        add(absl::StrCat("pacer_cpu ", options.cpu, " refused: ", std::strerror(rc),
                         " (is the CPU in this process's cpuset?)."));
      }
    }
  }
  if (options.realtime) {
    sched_param param{};
    param.sched_priority = 1;
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param); rc != 0) {
      add(absl::StrCat("pacer_realtime refused (", std::strerror(rc),
                       "): SCHED_FIFO needs CAP_SYS_NICE or a real-time priority limit of at "
                       "least 1 (ulimit -r, limits.conf rtprio); the pacer runs at normal "
                       "priority."));
    }
  }
  return refused;
}

}  // namespace surge::worker
