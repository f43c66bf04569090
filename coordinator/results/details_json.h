// One line of the details file (R-OUT-1) written directly into a buffer,
// without building a JSON object (so that record ingest reaches 500,000
// records/s). The bytes are those nlohmann::json's dump() gave for the same
// record — the same keys in the same (sorted) order, the same number and
// string forms — so files written before and after read the same; the old
// object-building writer is kept in the tests as the reference.
#ifndef SURGE_COORDINATOR_RESULTS_DETAILS_JSON_H_
#define SURGE_COORDINATOR_RESULTS_DETAILS_JSON_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "surge/v1/record.pb.h"

namespace surge::coordinator {

// Appends `ns` as seconds (NanosToSeconds(ns), a double) in nlohmann::json's
// number form: shortest digits of its Grisu2 printer, "1.0" for whole
// numbers, exponent form "1e-05" below 1e-4 and at 1e15 and above.
// Computed from the integer: the digits of ns with trailing zeros dropped,
// which are the digits Grisu2 gives whenever ns/1e9 lies well inside its
// double's rounding interval (more than 1/64 of the interval from either
// end: Grisu2's interval is narrowed by about 1/1000 of it); otherwise, and
// for |ns| ≥ 1e15, nlohmann's own printer. ~10 ns instead of ~60 ns.
void AppendJsonSeconds(int64_t ns, std::string* out);

// Appends `text` as a JSON string in nlohmann::json's dump() form (no
// ASCII escaping): " \\ and the control characters escaped (\b \t \n \f \r,
// others as \u00XX), valid UTF-8 copied as it is; text that is not valid
// UTF-8 is written as nlohmann's dump with error_handler replace writes it
// (U+FFFD for each bad sequence) — where the old writer threw.
void AppendJsonString(std::string_view text, std::string* out);

// Appends the record's details line and "\n" (keys in sorted order:
// actual_offset_s, attempt, blocked_s, cached_tokens (only when the server
// reported it), catch_up_delay_s,
// e2el_from_planned_s, e2el_s, error, finish_reason, http_retries,
// http_status, index, input_tokens, interrupted_offset_s, itl_s, late,
// lateness_s, max_tokens, output_tokens, output_tokens_estimated,
// planned_offset_s, released_offset_s, retry_offset_s, retry_reason,
// short_output, status, ttfc_s, ttft_from_planned_s, ttft_s, worker; what
// each holds: DetailsWriter::Append). Pure.
void AppendDetailsLine(const surge::v1::RequestRecord& record, std::string* out);

// Bytes to write, grown without zero-filling (a std::string's resize
// would clear the ~10 KB a line reserves, a quarter of the line's cost).
class LineBuffer {
 public:
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }
  // Room for `n` more bytes after size(); returns where they start.
  char* Reserve(size_t n);
  // Ends the content at `end` (within the room Reserve gave).
  void SetEnd(char* end) { size_ = static_cast<size_t>(end - data_.get()); }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// AppendDetailsLine into a LineBuffer (the details writer's).
void AppendDetailsLine(const surge::v1::RequestRecord& record, LineBuffer* out);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_RESULTS_DETAILS_JSON_H_
