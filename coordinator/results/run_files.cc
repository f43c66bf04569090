#include "coordinator/results/run_files.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "common/time_units.h"
#include "coordinator/results/summary.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using surge::v1::RequestRecord;
using surge::v1::RequestStatus;

// Appends `v` with 17 significant digits (shortest form that round-trips).
void AppendDouble(std::string& out, double v) {
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 17);
  out.append(buf, result.ptr);
}

nlohmann::json SecondsOrNull(bool reached, int64_t ns) {
  if (!reached) return nullptr;
  return NanosToSeconds(ns);
}

}  // namespace

std::string SafeFileName(const std::string& name) {
  std::string out;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    out.push_back(c == '/' || c == '\\' || u < 0x20 || u == 0x7f ? '_' : c);
  }
  if (!out.empty() && out[0] == '.') out[0] = '_';
  constexpr size_t kMaxBytes = 120;
  if (out.size() > kMaxBytes) {
    size_t cut = kMaxBytes;
    // Do not split a UTF-8 character: back up over continuation bytes.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  return out.empty() ? "unknown" : out;
}

absl::Status CheckOutputDir(const fs::path& output_dir) {
  // The folder itself when it exists, else its nearest existing ancestor
  // (where CreateRunFolder will create the rest): a folder surge may write in.
  // Nothing is created here, so a run refused later leaves no trace.
  std::error_code ec;
  fs::path existing = output_dir.empty() ? fs::path(".") : output_dir;
  while (!fs::exists(existing, ec) && existing.has_relative_path() && existing.has_parent_path() &&
         existing.parent_path() != existing) {
    existing = existing.parent_path();
  }
  if (!fs::exists(existing, ec)) existing = ".";
  auto problem = [&output_dir](const std::string& why) {
    return absl::FailedPreconditionError(
        absl::StrCat("output_dir = \"", output_dir.string(), "\": ", why, " (flag --output-dir)"));
  };
  if (!fs::is_directory(existing, ec)) {
    return problem(absl::StrCat("cannot create the folder: ", existing.string(),
                                " exists and is not a folder"));
  }
  if (access(existing.c_str(), W_OK | X_OK) != 0) {
    return problem(absl::StrCat(existing == output_dir
                                    ? "cannot write in it: "
                                    : "cannot create the folder in " + existing.string() + ": ",
                                std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<fs::path> CreateRunFolder(const fs::path& output_dir, const std::string& model,
                                         std::chrono::system_clock::time_point wall_now) {
  const std::time_t t = std::chrono::system_clock::to_time_t(wall_now);
  std::tm local{};
  localtime_r(&t, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &local);
  const std::string model_dir = SafeFileName(model);
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create output_dir ", output_dir.string(), ": ", ec.message()));
  }
  // create_directory (not ..ies) on the timestamp folder tells us atomically
  // whether another run already took the name.
  for (int suffix = 0; suffix < 10000; ++suffix) {
    const std::string name = suffix == 0 ? stamp : absl::StrCat(stamp, "_", suffix);
    const fs::path run = output_dir / name;
    if (!fs::create_directory(run, ec)) {
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot create run folder ", run.string(), ": ", ec.message()));
      }
      continue;  // exists
    }
    const fs::path folder = run / "performances" / model_dir;
    fs::create_directories(folder, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create ", folder.string(), ": ", ec.message()));
    }
    return folder;
  }
  return absl::InternalError(absl::StrCat("no free run folder name under ", output_dir.string()));
}

absl::Status WritePlanCsv(const ArrivalSchedule& plan, const fs::path& path,
                          const std::function<void(uint64_t rows_done)>& progress) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  std::string buffer = "index,rate_rps,interval_s,offset_s,anomaly\n";
  buffer.reserve(1 << 20);
  bool ok = true;
  for (size_t i = 0; i < plan.size(); ++i) {
    absl::StrAppend(&buffer, i, ",");
    AppendDouble(buffer, plan.rate_rps[i]);
    buffer.push_back(',');
    AppendDouble(buffer, plan.interval_s[i]);
    buffer.push_back(',');
    AppendDouble(buffer, plan.offset_s[i]);
    buffer.push_back(',');
    const std::string_view name = AnomalyName(plan.anomaly[i]);
    buffer.append(name.data(), name.size());
    buffer.push_back('\n');
    if (buffer.size() > (1 << 20) - 256) {
      ok &= std::fwrite(buffer.data(), 1, buffer.size(), f) == buffer.size();
      buffer.clear();
    }
    if (progress && (i + 1) % (1u << 20) == 0) progress(i + 1);
  }
  if (progress) progress(plan.size());
  ok &= std::fwrite(buffer.data(), 1, buffer.size(), f) == buffer.size();
  ok &= std::fclose(f) == 0;
  if (!ok) return absl::InternalError(absl::StrCat("write failed: ", path.string()));
  return absl::OkStatus();
}

absl::StatusOr<ArrivalSchedule> ReadPlanCsv(const fs::path& path, const ResolvedTraffic& traffic,
                                            uint64_t seed) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat("plan file ", path.string(), ": ",
                     fs::exists(path, ec) ? "is not a regular file" : "no such file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("plan file ", path.string(), ": cannot read"));
  ArrivalSchedule plan;
  plan.traffic = traffic;
  plan.seed = seed;
  static constexpr std::array<const char*, 5> kColumns = {"index", "rate_rps", "interval_s",
                                                          "offset_s", "anomaly"};
  static const std::string kHeader = "index,rate_rps,interval_s,offset_s,anomaly";
  std::string line;
  uint64_t line_no = 0;
  auto bad = [&](size_t column, const std::string& why) {
    return absl::DataLossError(absl::StrCat(
        "plan file ", path.string(), " line ", line_no,
        column == 0 ? std::string()
                    : absl::StrCat(", column ", column, " (", kColumns[column - 1], ")"),
        ": ", why));
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) {
      if (line != kHeader) {
        return bad(0, absl::StrCat("the header must be \"", kHeader, "\" (R-OUT-2), not \"",
                                   line.substr(0, 80), "\""));
      }
      continue;
    }
    if (line.empty() && in.peek() == std::char_traits<char>::eof()) break;  // final newline
    std::array<std::string, 5> fields;
    size_t count = 0;
    for (size_t from = 0;;) {
      const size_t comma = line.find(',', from);
      if (count < fields.size()) fields[count] = line.substr(from, comma - from);
      ++count;
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    if (count != fields.size()) {
      return bad(0, absl::StrCat("has ", count, " fields; a row is ", kHeader));
    }
    // Numbers exactly as written: std::from_chars rounds correctly, so the
    // 17 significant digits of WritePlanCsv give back the very same double.
    uint64_t index = 0;
    {
      const std::string& f = fields[0];
      const auto r = std::from_chars(f.data(), f.data() + f.size(), index);
      if (r.ec != std::errc() || r.ptr != f.data() + f.size()) {
        return bad(1, absl::StrCat("\"", f, "\" is not a request index"));
      }
      if (index != plan.size()) {
        return bad(1, absl::StrCat("index ", index, " out of order: expected ", plan.size(),
                                   " (one row per request, in index order)"));
      }
    }
    double numbers[3] = {0, 0, 0};
    for (size_t k = 0; k < 3; ++k) {
      const std::string& f = fields[k + 1];
      const auto r = std::from_chars(f.data(), f.data() + f.size(), numbers[k]);
      if (r.ec != std::errc() || r.ptr != f.data() + f.size() || !std::isfinite(numbers[k])) {
        return bad(k + 2, absl::StrCat("\"", f, "\" is not a finite number"));
      }
    }
    const double offset = numbers[2];
    if (offset < 0) return bad(4, absl::StrCat("offset ", fields[3], " is negative"));
    if (!plan.offset_s.empty() && offset < plan.offset_s.back()) {
      return bad(4, absl::StrCat("offset ", fields[3], " is before the previous row's (",
                                 plan.offset_s.back(), "): offsets never decrease"));
    }
    const std::string& n = fields[4];
    Anomaly anomaly;
    if (n == "normal") {
      anomaly = Anomaly::kNormal;
    } else if (n == "timing") {
      anomaly = Anomaly::kTiming;
    } else if (n == "burstiness") {
      anomaly = Anomaly::kBurstiness;
    } else if (n == "instant") {
      anomaly = Anomaly::kInstant;
    } else {
      return bad(5, absl::StrCat("\"", n, "\" is not normal, timing, burstiness or instant"));
    }
    plan.rate_rps.push_back(numbers[0]);
    plan.interval_s.push_back(numbers[1]);
    plan.offset_s.push_back(offset);
    plan.anomaly.push_back(anomaly);
  }
  if (line_no == 0)
    return absl::DataLossError(absl::StrCat("plan file ", path.string(), " is empty"));
  if (plan.size() == 0) {
    return absl::DataLossError(absl::StrCat("plan file ", path.string(), " has no rows"));
  }
  return plan;
}

std::string StatusName(RequestStatus status) {
  switch (status) {
    case surge::v1::OK:
      return "ok";
    case surge::v1::FAILED:
      return "failed";
    case surge::v1::LOST:
      return "lost";
    case surge::v1::NOT_SENT:
      return "not_sent";
    case surge::v1::INTERRUPTED:
      return "interrupted";
    case surge::v1::SKIPPED:
      return "skipped";
    default:
      return "unknown";
  }
}

absl::StatusOr<std::unique_ptr<DetailsWriter>> DetailsWriter::Create(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return std::unique_ptr<DetailsWriter>(new DetailsWriter(f));
}

DetailsWriter::~DetailsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void DetailsWriter::Append(const RequestRecord& r) {
  const bool sent = r.sent();
  nlohmann::json j;
  j["index"] = r.index();
  j["attempt"] = r.attempt();
  j["worker"] = r.worker();
  j["status"] = StatusName(r.status());
  j["planned_offset_s"] = NanosToSeconds(r.planned_ns());
  j["released_offset_s"] = SecondsOrNull(r.released(), r.released_ns());
  j["actual_offset_s"] = SecondsOrNull(sent, r.sent_ns());
  j["lateness_s"] = SecondsOrNull(sent, r.sent_ns() - r.planned_ns());
  j["blocked_s"] = NanosToSeconds(r.blocked_ns());
  // Late-send policy: released more than late_threshold_ms after its planned
  // send, and (cap) how long the catch-up spacing held it back.
  j["late"] = r.late();
  j["catch_up_delay_s"] = NanosToSeconds(r.catch_up_delay_ns());
  j["http_status"] = r.http_status();
  j["ttft_s"] = SecondsOrNull(r.ttft_ns() != 0, r.ttft_ns());
  j["ttfc_s"] = SecondsOrNull(r.ttfc_ns() != 0, r.ttfc_ns());
  j["e2el_s"] = SecondsOrNull(r.e2el_ns() != 0, r.e2el_ns());
  // The same from the planned send (lateness added; FromPlannedNs).
  j["ttft_from_planned_s"] = SecondsOrNull(sent && r.ttft_ns() != 0, FromPlannedNs(r, r.ttft_ns()));
  j["e2el_from_planned_s"] = SecondsOrNull(sent && r.e2el_ns() != 0, FromPlannedNs(r, r.e2el_ns()));
  // Interrupted requests: when they were cut off, seconds from t0.
  j["interrupted_offset_s"] = SecondsOrNull(r.interrupted_ns() != 0, r.interrupted_ns());
  nlohmann::json itl = nlohmann::json::array();
  for (int64_t gap : r.itl_ns()) itl.push_back(NanosToSeconds(gap));
  j["itl_s"] = std::move(itl);
  j["input_tokens"] = r.input_tokens();
  j["output_tokens"] = r.output_tokens();
  j["output_tokens_estimated"] = r.output_tokens_estimated();
  j["max_tokens"] = r.max_tokens();
  j["finish_reason"] =
      r.finish_reason().empty() ? nlohmann::json() : nlohmann::json(r.finish_reason());
  j["short_output"] = r.short_output();
  j["http_retries"] = r.http_retries();
  j["retry_reason"] = r.retry_reason();
  j["retry_offset_s"] = SecondsOrNull(r.retry_sent_ns() != 0, r.retry_sent_ns());
  j["error"] = r.error();
  // The failure kind as a label ("http_5xx", "not_sent"; "" for ok).
  j["failure_kind"] = FailureKindLabel(FailureKindOf(r));
  const std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
}

absl::Status DetailsWriter::Flush() {
  if (std::fflush(file_) != 0 || std::ferror(file_)) {
    return absl::InternalError("cannot write the details file");
  }
  return absl::OkStatus();
}

void DetailsWriter::Add(const RequestRecord& record) {
  Append(record);
  if (absl::Status s = Flush(); !s.ok() && !write_failed_) {
    write_failed_ = true;
    LogError(absl::StrCat(s.message(), ": records from index ", record.index(),
                          " on may be missing from it (the summary still counts them)"));
  }
}

absl::StatusOr<RequestRecord> ParseDetailsLine(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("index")) {
    return absl::DataLossError("not a details record");
  }
  auto present = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number();
  };
  auto ns = [&](const char* key) -> int64_t {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return 0;
    return SecondsToNanos(it->get<double>());
  };
  RequestRecord r;
  r.set_index(j.value("index", uint64_t{0}));
  r.set_attempt(j.value("attempt", 0u));
  r.set_worker(j.value("worker", -1));
  const std::string status = j.value("status", std::string());
  r.set_status(status == "ok"            ? surge::v1::OK
               : status == "failed"      ? surge::v1::FAILED
               : status == "lost"        ? surge::v1::LOST
               : status == "not_sent"    ? surge::v1::NOT_SENT
               : status == "interrupted" ? surge::v1::INTERRUPTED
               : status == "skipped"     ? surge::v1::SKIPPED
                                         : surge::v1::REQUEST_STATUS_UNSPECIFIED);
  r.set_planned_ns(ns("planned_offset_s"));
  r.set_released_ns(ns("released_offset_s"));
  r.set_sent_ns(ns("actual_offset_s"));
  r.set_sent(present("actual_offset_s"));
  r.set_released(present("released_offset_s"));
  r.set_blocked_ns(ns("blocked_s"));
  r.set_late(j.value("late", false));
  r.set_catch_up_delay_ns(ns("catch_up_delay_s"));
  r.set_http_status(j.value("http_status", 0u));
  r.set_ttft_ns(ns("ttft_s"));
  r.set_ttfc_ns(ns("ttfc_s"));
  r.set_e2el_ns(ns("e2el_s"));
  r.set_interrupted_ns(ns("interrupted_offset_s"));
  if (auto it = j.find("itl_s"); it != j.end() && it->is_array()) {
    for (const auto& gap : *it) {
      if (gap.is_number()) r.add_itl_ns(SecondsToNanos(gap.get<double>()));
    }
  }
  r.set_input_tokens(j.value("input_tokens", 0u));
  r.set_output_tokens(j.value("output_tokens", 0u));
  r.set_output_tokens_estimated(j.value("output_tokens_estimated", false));
  r.set_max_tokens(j.value("max_tokens", 0u));
  if (auto it = j.find("finish_reason"); it != j.end() && it->is_string()) {
    r.set_finish_reason(it->get<std::string>());
  }
  r.set_short_output(j.value("short_output", false));
  r.set_http_retries(j.value("http_retries", 0u));
  r.set_retry_reason(j.value("retry_reason", std::string()));
  r.set_retry_sent_ns(ns("retry_offset_s"));
  r.set_error(j.value("error", std::string()));
  // Details files from before failure_kind: the kind from the error text.
  const std::string kind = j.value("failure_kind", std::string());
  r.set_failure_kind(kind.empty() ? FailureKindOf(r) : FailureKindFromLabel(kind));
  if (!kind.empty() && r.failure_kind() == surge::v1::FAILURE_KIND_UNSPECIFIED) {
    r.set_failure_kind(surge::v1::FAILURE_KIND_OTHER);  // a label this release does not know
  }
  return r;
}

std::string FormatLocalTime(std::chrono::system_clock::time_point wall) {
  const std::time_t t = std::chrono::system_clock::to_time_t(wall);
  std::tm local{};
  localtime_r(&t, &local);
  char text[48];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S %z", &local);
  return text;
}

std::string RunStartFromFolder(const fs::path& run_folder) {
  fs::path folder = run_folder;
  if (folder.filename().empty()) folder = folder.parent_path();  // trailing '/'
  const fs::path performances = folder.parent_path();
  if (performances.filename() != "performances") return "";
  const std::string stamp = performances.parent_path().filename().string();
  // YYYYMMDD_HHMMSS, optionally _k.
  if (stamp.size() < 15 || stamp[8] != '_') return "";
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (stamp[i] < '0' || stamp[i] > '9')) return "";
  }
  if (stamp.size() > 15 && stamp[15] != '_') return "";
  return absl::StrCat(stamp.substr(0, 4), "-", stamp.substr(4, 2), "-", stamp.substr(6, 2), " ",
                      stamp.substr(9, 2), ":", stamp.substr(11, 2), ":", stamp.substr(13, 2),
                      " (local time)");
}

}  // namespace surge::coordinator
