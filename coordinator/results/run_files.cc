#include "coordinator/results/run_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "common/time_units.h"
#include "coordinator/results/details_json.h"
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
  // UTC, so that names sort by time also across a daylight-saving change.
  const std::string stamp = RunFolderStamp(wall_now);
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
  const bool classes = !plan.classes.empty();
  std::string buffer = classes ? "index,rate_rps,interval_s,offset_s,anomaly,class\n"
                               : "index,rate_rps,interval_s,offset_s,anomaly\n";
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
    if (classes) absl::StrAppend(&buffer, ",", plan.classes[plan.class_index[i]].name);
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
                                            uint64_t seed,
                                            const std::vector<TrafficClassPlan>& classes) {
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
  static constexpr std::array<const char*, 6> kColumns = {"index",    "rate_rps", "interval_s",
                                                          "offset_s", "anomaly",  "class"};
  const bool with_classes = !classes.empty();
  const std::string kHeader = with_classes ? "index,rate_rps,interval_s,offset_s,anomaly,class"
                                           : "index,rate_rps,interval_s,offset_s,anomaly";
  const size_t columns = with_classes ? 6 : 5;
  std::map<std::string, uint16_t, std::less<>> class_of;
  for (size_t c = 0; c < classes.size(); ++c) class_of.emplace(classes[c].name, c);
  plan.classes = classes;
  for (TrafficClassPlan& c : plan.classes) c.requests = 0;
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
    std::array<std::string, 6> fields;
    size_t count = 0;
    for (size_t from = 0;;) {
      const size_t comma = line.find(',', from);
      if (count < fields.size()) fields[count] = line.substr(from, comma - from);
      ++count;
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    if (count != columns) {
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
    if (with_classes) {
      const auto it = class_of.find(fields[5]);
      if (it == class_of.end()) {
        return bad(6,
                   absl::StrCat("\"", fields[5], "\" is not one of the configuration's classes"));
      }
      plan.class_index.push_back(it->second);
      plan.class_request.push_back(plan.classes[it->second].requests++);
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

struct DetailsWriter::Queue {
  std::mutex mu;
  std::condition_variable work_cv;  // the writer thread waits for records
  std::condition_variable done_cv;  // Add (queue full) and Flush wait for it
  std::vector<RequestRecord> pending;
  size_t pending_count = 0;
  uint64_t added = 0;
  uint64_t written = 0;
  bool writer_waiting = false;
  bool stop = false;
  bool failed = false;
  std::thread thread;
};

absl::StatusOr<std::unique_ptr<DetailsWriter>> DetailsWriter::Create(const fs::path& path,
                                                                     DetailsWriterOptions options) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path.string(), ": ", std::strerror(errno)));
  }
  return std::unique_ptr<DetailsWriter>(new DetailsWriter(fd, options));
}

DetailsWriter::DetailsWriter(int fd, DetailsWriterOptions options) : fd_(fd), options_(options) {
  if (options_.max_queued == 0) options_.max_queued = 1;
  if (options_.writer_thread) {
    queue_ = std::make_unique<Queue>();
    queue_->thread = std::thread([this] { WriterLoop(); });
  }
}

DetailsWriter::~DetailsWriter() {
  if (queue_ != nullptr) {
    {
      std::lock_guard<std::mutex> lock(queue_->mu);
      queue_->stop = true;
    }
    queue_->work_cv.notify_one();
    queue_->thread.join();  // the loop writes everything queued first
  } else if (buffer_.size() > 0) {
    WriteAll(buffer_.data(), buffer_.size());
  }
  ::close(fd_);
}

bool DetailsWriter::WriteAll(const char* bytes, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void DetailsWriter::WriterLoop() {
  Queue& q = *queue_;
  std::vector<RequestRecord> batch;
  LineBuffer out;
  for (;;) {
    size_t n = 0;
    {
      std::unique_lock<std::mutex> lock(q.mu);
      while (q.pending_count == 0 && !q.stop) {
        q.writer_waiting = true;
        q.work_cv.wait(lock);
      }
      if (q.pending_count == 0) return;  // stopped, everything written
      // Take the filled slots; Add refills the (older) other vector's.
      std::swap(q.pending, batch);
      n = q.pending_count;
      q.pending_count = 0;
    }
    // Written in pieces of about 1 MB: bounded memory, and the first lines
    // of a large batch reach the file early.
    bool ok = true;
    out.clear();
    for (size_t i = 0; i < n; ++i) {
      AppendDetailsLine(batch[i], &out);
      if (out.size() >= (1u << 20) || i + 1 == n) {
        ok &= WriteAll(out.data(), out.size());
        out.clear();
      }
    }
    {
      std::lock_guard<std::mutex> lock(q.mu);
      q.written += n;
      q.failed |= !ok;
    }
    q.done_cv.notify_all();
  }
}

void DetailsWriter::Append(const RequestRecord& r) {
  if (queue_ == nullptr) {
    AppendDetailsLine(r, &buffer_);
    return;
  }
  Queue& q = *queue_;
  bool wake = false;
  {
    std::unique_lock<std::mutex> lock(q.mu);
    q.done_cv.wait(lock, [&] { return q.added - q.written < options_.max_queued; });
    if (q.pending_count < q.pending.size()) {
      q.pending[q.pending_count].CopyFrom(r);
    } else {
      q.pending.push_back(r);
    }
    ++q.pending_count;
    ++q.added;
    wake = q.writer_waiting;
    q.writer_waiting = false;
    write_failed_ = q.failed;
  }
  if (wake) q.work_cv.notify_one();
}

absl::Status DetailsWriter::Flush() {
  if (queue_ != nullptr) {
    std::unique_lock<std::mutex> lock(queue_->mu);
    queue_->done_cv.wait(lock, [&] { return queue_->written == queue_->added; });
    write_failed_ = queue_->failed;
  } else if (buffer_.size() > 0) {
    write_failed_ |= !WriteAll(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  if (write_failed_) return absl::InternalError("cannot write the details file");
  return absl::OkStatus();
}

void DetailsWriter::ReportFailure(uint64_t from_index) {
  if (failure_logged_) return;
  failure_logged_ = true;
  LogError(absl::StrCat("cannot write the details file: records from index ", from_index,
                        " on may be missing from it (the summary still counts them)"));
}

void DetailsWriter::Add(const RequestRecord& record) {
  Append(record);
  if (queue_ == nullptr) (void)Flush();
  if (write_failed_) ReportFailure(record.index());
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
  r.set_asked_input_tokens(j.value("asked_input_tokens", 0u));
  r.set_input_tokens_estimated(j.value("input_tokens_estimated", false));
  r.set_token_counter(TokenCounterFromLabel(j.value("token_counter", std::string())));
  r.set_output_tokens(j.value("output_tokens", 0u));
  r.set_output_tokens_estimated(j.value("output_tokens_estimated", false));
  if (auto it = j.find("cached_tokens"); it != j.end() && it->is_number_unsigned()) {
    r.set_cached_tokens(it->get<uint32_t>());
    r.set_cached_tokens_reported(true);
  }
  r.set_max_tokens(j.value("max_tokens", 0u));
  if (auto it = j.find("finish_reason"); it != j.end() && it->is_string()) {
    r.set_finish_reason(it->get<std::string>());
  }
  r.set_short_output(j.value("short_output", false));
  r.set_warmup(j.value("warmup", false));
  r.set_traffic_class(j.value("class", std::string()));
  r.set_model(j.value("model", std::string()));
  if (j.contains("session")) {
    r.set_in_session(true);
    r.set_session(j.value("session", uint64_t{0}));
    r.set_turn(j.value("turn", uint32_t{0}));
    r.set_think_ns(ns("think_s"));
  }
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

void ForEachDetailsLine(const fs::path& path,
                        const std::function<void(absl::StatusOr<RequestRecord>)>& on_line) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) on_line(ParseDetailsLine(line));
}

namespace {

// `wall` in UTC, written by strftime's `format`.
std::string FormatUtc(std::chrono::system_clock::time_point wall, const char* format) {
  const std::time_t t = std::chrono::system_clock::to_time_t(wall);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[48];
  std::strftime(text, sizeof(text), format, &utc);
  return text;
}

}  // namespace

std::string RunFolderStamp(std::chrono::system_clock::time_point wall) {
  return FormatUtc(wall, "%Y%m%d_%H%M%SZ");
}

std::string FormatLocalTime(std::chrono::system_clock::time_point wall) {
  const std::time_t t = std::chrono::system_clock::to_time_t(wall);
  std::tm local{};
  localtime_r(&t, &local);
  char text[48];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &local);
  // ISO 8601 writes the offset "+08:00"; strftime's %z gives "+0800".
  const long offset_min = local.tm_gmtoff / 60;  // NOLINT(runtime/int): tm's type
  const long magnitude = offset_min < 0 ? -offset_min : offset_min;  // NOLINT(runtime/int)
  return absl::StrFormat("%s%c%02d:%02d", text, offset_min < 0 ? '-' : '+', magnitude / 60,
                         magnitude % 60);
}

std::string FormatUtcTime(std::chrono::system_clock::time_point wall) {
  return FormatUtc(wall, "%Y-%m-%dT%H:%M:%SZ");
}

namespace {

// The run folder's timestamp folder name: "YYYYMMDD_HHMMSS" followed by
// "Z" (UTC, this release) or nothing (local time, older releases), then
// optionally "_k". Its digits and whether it is UTC; nullopt for another
// shape.
struct FolderStamp {
  std::string digits;  // YYYYMMDD_HHMMSS
  bool utc = false;
};
std::optional<FolderStamp> ParseFolderStamp(const fs::path& run_folder) {
  fs::path folder = run_folder;
  if (folder.filename().empty()) folder = folder.parent_path();  // trailing '/'
  const fs::path performances = folder.parent_path();
  if (performances.filename() != "performances") return std::nullopt;
  const std::string stamp = performances.parent_path().filename().string();
  if (stamp.size() < 15 || stamp[8] != '_') return std::nullopt;
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (stamp[i] < '0' || stamp[i] > '9')) return std::nullopt;
  }
  FolderStamp out{stamp.substr(0, 15), stamp.size() > 15 && stamp[15] == 'Z'};
  const size_t rest = out.utc ? 16 : 15;
  if (stamp.size() > rest && stamp[rest] != '_') return std::nullopt;
  return out;
}

// The UTC instant of a "YYYYMMDD_HHMMSS" read as UTC.
std::chrono::system_clock::time_point UtcStampTime(const std::string& d) {
  std::tm utc{};
  utc.tm_year = std::stoi(d.substr(0, 4)) - 1900;
  utc.tm_mon = std::stoi(d.substr(4, 2)) - 1;
  utc.tm_mday = std::stoi(d.substr(6, 2));
  utc.tm_hour = std::stoi(d.substr(9, 2));
  utc.tm_min = std::stoi(d.substr(11, 2));
  utc.tm_sec = std::stoi(d.substr(13, 2));
  return std::chrono::system_clock::from_time_t(timegm(&utc));
}

}  // namespace

std::string RunStartFromFolder(const fs::path& run_folder) {
  const std::optional<FolderStamp> stamp = ParseFolderStamp(run_folder);
  if (!stamp.has_value()) return "";
  if (stamp->utc) return FormatLocalTime(UtcStampTime(stamp->digits));
  const std::string& d = stamp->digits;
  return absl::StrCat(d.substr(0, 4), "-", d.substr(4, 2), "-", d.substr(6, 2), " ", d.substr(9, 2),
                      ":", d.substr(11, 2), ":", d.substr(13, 2), " (local time)");
}

std::string RunStartUtcFromFolder(const fs::path& run_folder) {
  const std::optional<FolderStamp> stamp = ParseFolderStamp(run_folder);
  if (!stamp.has_value() || !stamp->utc) return "";
  return FormatUtcTime(UtcStampTime(stamp->digits));
}

}  // namespace surge::coordinator
