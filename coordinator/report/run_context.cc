#include "coordinator/report/run_context.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/plan/traffic.h"  // TrafficFact

namespace surge::coordinator {

std::string RedactedUrl(std::string_view url) {
  std::string out(url);
  const size_t scheme = out.find("://");
  const size_t host = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t authority_end = out.find_first_of("/?#", host);
  const size_t at = out.rfind('@', authority_end == std::string::npos ? out.size() : authority_end);
  if (at != std::string::npos && at >= host) out.erase(host, at + 1 - host);
  const size_t query = out.find_first_of("?#", host);
  if (query != std::string::npos) out.erase(query);
  return out;
}

PageContext RunContextItems(const surge::v1::RunConfig& config, const ArrivalSchedule& plan,
                            const std::string& dataset, const std::string& started_at,
                            std::string_view version) {
  const auto& target = config.target();
  const auto& ds = config.dataset();
  PageContext c;
  c.push_back({"Model", target.model().empty() ? "(not given)" : target.model()});
  c.push_back(
      {"Server", target.base_url().empty()
                     ? "surge's built-in simulated server (surge run starts it on 127.0.0.1)"
                     : RedactedUrl(target.base_url())});
  c.push_back({"Endpoint", target.endpoint().empty() ? "/v1/chat/completions" : target.endpoint()});
  std::string data = dataset;
  const std::string& kind = ds.dataset_name();
  if (kind.empty() || kind == "synthetic" || kind == "random") {
    absl::StrAppend(&data, " (synthetic prompts: input ", ds.random_input_len(), ", output ",
                    ds.random_output_len(), " tokens, ",
                    ds.random_len_dist().empty() ? "fixed" : ds.random_len_dist(), " lengths)");
  } else {
    absl::StrAppend(&data, " (", kind, ": ", ds.dataset_path(),
                    ds.trace_replay() ? ", trace replay" : "", ")");
  }
  c.push_back({"Dataset", data});
  c.push_back({"Requests (N)", absl::StrCat(plan.size())});
  c.push_back({"Seed", absl::StrCat(config.seed())});
  for (const TrafficFact& fact : plan.traffic.description.context) {
    c.push_back({fact.label, fact.value});
  }
  c.push_back({"Workers", config.workers() == 0
                              ? std::string("chosen by surge run (usable CPUs, peak rate)")
                              : absl::StrCat(config.workers())});
  c.push_back({"Assignment", config.assign() == surge::v1::ASSIGN_POLICY_LEAST_LOADED
                                 ? std::string("least-loaded (fewest outstanding requests)")
                                 : std::string("round-robin (request i to worker i mod W)")});
  c.push_back({"Max concurrency", config.max_concurrency() == 0
                                      ? std::string("no cap")
                                      : absl::StrCat(config.max_concurrency(), " in flight")});
  c.push_back({"Run started", started_at.empty() ? std::string("unknown") : started_at});
  c.push_back({"surge version", std::string(version)});
  return c;
}

}  // namespace surge::coordinator
