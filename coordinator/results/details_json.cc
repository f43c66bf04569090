#include "coordinator/results/details_json.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/failure_kind.h"
#include "common/time_units.h"
#include "common/utf8.h"
#include "coordinator/results/input_lengths.h"
#include "coordinator/results/run_files.h"
#include "coordinator/results/summary.h"

namespace surge::coordinator {
namespace {

using surge::v1::RequestRecord;

// Room a number needs: nlohmann's printer asks for 64 bytes of buffer (its
// longest output is 25: "-2.2250738585072014e-308"); an int64 takes 20.
constexpr size_t kMaxNumber = 64;

// nlohmann's own double printer (Grisu2 + its layout), as dump() calls it;
// at most 25 bytes.
char* WriteGrisu(char* p, double v) { return nlohmann::detail::to_chars(p, p + kMaxNumber, v); }

// True when the decimal a·10⁻⁹ lies more than 1/64 of the rounding interval
// of v = a/1e9 (the double nearest to it) away from both ends of that
// interval. Grisu2 searches an interval narrowed by about 1/1000 of it on
// each side (its 64-bit products are inexact; measured: every value where
// its digits differ from a's lies within 1/1075 of an end), and a·10⁻⁹ has
// at most 15 significant digits, so no other number with as few digits
// rounds to v: Grisu2 then prints exactly a's digits. Exact integer
// arithmetic: with v = m·2^e (m 53 bits), the interval is
// [(2m−1)·2^(e−1), (2m+1)·2^(e−1)], compared with a·10⁻⁹ after scaling
// both by 2^(1−e)·10⁹ (< 2^85: fits 128 bits).
bool DigitsAreGrisus(uint64_t a, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  const int biased_exponent = static_cast<int>(bits >> 52);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  // A power of two has a narrower interval below it; subnormals cannot
  // occur (a ≥ 1 gives v ≥ 1e-9). Both go the slow way.
  if (fraction == 0 || biased_exponent == 0) return false;
  const uint64_t m = fraction | (uint64_t{1} << 52);
  const int shift = 1 - (biased_exponent - 1075);  // 1 − e ≥ 0 for v < 2^53
  if (shift < 0 || shift > 100) return false;
  using U128 = unsigned __int128;
  const U128 x = static_cast<U128>(a) << shift;
  const U128 lo = static_cast<U128>(2 * m - 1) * 1000000000u;
  const U128 hi = static_cast<U128>(2 * m + 1) * 1000000000u;
  constexpr U128 kMargin = 2000000000u / 64;  // interval width 2·10⁹ over 64
  return x > lo + kMargin && x + kMargin < hi;
}

// The decimal digit pairs "00" … "99".
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324"
    "25262728293031323334353637383940414243444546474849"
    "50515253545556575859606162636465666768697071727374"
    "75767778798081828384858687888990919293949596979899";

// Writes `v` (< 10⁹) as exactly 9 digits, zero-padded, at `p`.
void WriteNineDigits(char* p, uint32_t v) {
  p[0] = static_cast<char>('0' + v / 100000000);
  v %= 100000000;
  for (int i = 7; i > 0; i -= 2) {
    std::memcpy(p + i, kDigitPairs + 2 * (v % 100), 2);
    v /= 100;
  }
}

// Writes AppendJsonSeconds's text at `p` (room for kMaxNumber bytes);
// returns the end.
char* WriteSeconds(char* p, int64_t ns) {
  if (ns == 0) {
    std::memcpy(p, "0.0", 3);
    return p + 3;
  }
  constexpr int64_t kFastLimit = 1000000000000000;  // 1e15: ≤ 15 digits
  const double v = NanosToSeconds(ns);
  if (ns <= -kFastLimit || ns >= kFastLimit) return WriteGrisu(p, v);
  const uint64_t a = static_cast<uint64_t>(ns < 0 ? -ns : ns);
  if (!DigitsAreGrisus(a, v < 0 ? -v : v)) return WriteGrisu(p, v);
  // 0.1 ms ≤ |v| < 1 s (every ITL gap, most latencies): nlohmann's
  // 0.000ddd layout, i.e. "0." and the 9 digits of ns zero-padded, its
  // trailing zeros dropped — written at a fixed width, then cut.
  if (a >= 100000 && a < 1000000000) {
    if (ns < 0) *p++ = '-';
    p[0] = '0';
    p[1] = '.';
    WriteNineDigits(p + 2, static_cast<uint32_t>(a));
    char* end = p + 11;
    while (end[-1] == '0') --end;  // a ≠ 0: a nonzero digit stops it
    return end;
  }
  // Digits of a without trailing zeros: v = digits · 10^exponent.
  uint64_t digits = a;
  int exponent = -9;
  while (digits % 10 == 0) {
    digits /= 10;
    ++exponent;
  }
  char d[24];
  const int k = static_cast<int>(std::to_chars(d, d + sizeof(d), digits).ptr - d);
  // nlohmann's format_buffer with kMinExp = -4, kMaxExp = 15: n is the
  // position of the decimal point, v = 0.d₁d₂…d_k · 10ⁿ.
  const int n = k + exponent;
  if (ns < 0) *p++ = '-';
  if (k <= n && n <= 15) {  // digits, zeros, ".0"
    std::memcpy(p, d, k);
    p += k;
    std::memset(p, '0', n - k);
    p += n - k;
    *p++ = '.';
    *p++ = '0';
  } else if (0 < n && n <= 15) {  // ddd.ddd
    std::memcpy(p, d, n);
    p += n;
    *p++ = '.';
    std::memcpy(p, d + n, k - n);
    p += k - n;
  } else if (-4 < n && n <= 0) {  // 0.000ddd
    *p++ = '0';
    *p++ = '.';
    std::memset(p, '0', -n);
    p += -n;
    std::memcpy(p, d, k);
    p += k;
  } else {  // d.ddde±XX (at least two exponent digits)
    *p++ = d[0];
    if (k > 1) {
      *p++ = '.';
      std::memcpy(p, d + 1, k - 1);
      p += k - 1;
    }
    *p++ = 'e';
    int e10 = n - 1;
    *p++ = e10 < 0 ? '-' : '+';
    if (e10 < 0) e10 = -e10;
    if (e10 < 10) *p++ = '0';
    p = std::to_chars(p, p + 4, e10).ptr;
  }
  return p;
}

// Room a JSON string needs: 6 bytes per byte (\u00XX) and the quotes; the
// U+FFFD replacement for a bad byte takes 3.
size_t StringRoom(std::string_view text) { return 6 * text.size() + 2; }

// Writes AppendJsonString's text at `p` (room for StringRoom(text)).
char* WriteString(char* p, std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (!ascii && !IsValidUtf8(text)) {
    const std::string replaced =
        nlohmann::json(std::string(text))
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::memcpy(p, replaced.data(), replaced.size());
    return p + replaced.size();
  }
  *p++ = '"';
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != '"' && c != '\\') {
      *p++ = ch;
      continue;
    }
    *p++ = '\\';
    switch (c) {
      case '"':
        *p++ = '"';
        break;
      case '\\':
        *p++ = '\\';
        break;
      case '\b':
        *p++ = 'b';
        break;
      case '\t':
        *p++ = 't';
        break;
      case '\n':
        *p++ = 'n';
        break;
      case '\f':
        *p++ = 'f';
        break;
      case '\r':
        *p++ = 'r';
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        *p++ = 'u';
        *p++ = '0';
        *p++ = '0';
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 0xF];
      }
    }
  }
  *p++ = '"';
  return p;
}

// A details line written at a raw pointer into room reserved up front.
class LineWriter {
 public:
  explicit LineWriter(char* p) : p_(p) {}
  char* end() const { return p_; }
  // `text` must be a literal (the keys and punctuation).
  template <size_t N>
  void Raw(const char (&text)[N]) {
    std::memcpy(p_, text, N - 1);
    p_ += N - 1;
  }
  template <typename Int>
  void Integer(Int v) {
    p_ = std::to_chars(p_, p_ + kMaxNumber, v).ptr;
  }
  void Bool(bool v) {
    if (v) {
      Raw("true");
    } else {
      Raw("false");
    }
  }
  void Seconds(int64_t ns) { p_ = WriteSeconds(p_, ns); }
  void SecondsOrNull(bool reached, int64_t ns) {
    if (reached) {
      Seconds(ns);
    } else {
      Raw("null");
    }
  }
  void String(std::string_view text) { p_ = WriteString(p_, text); }

 private:
  char* p_;
};

}  // namespace

void AppendJsonSeconds(int64_t ns, std::string* out) {
  char buf[kMaxNumber];
  out->append(buf, WriteSeconds(buf, ns));
}

void AppendJsonString(std::string_view text, std::string* out) {
  const size_t old_size = out->size();
  out->resize(old_size + StringRoom(text));
  out->resize(WriteString(out->data() + old_size, text) - out->data());
}

char* LineBuffer::Reserve(size_t n) {
  if (size_ + n > capacity_) {
    const size_t capacity = std::max(2 * capacity_, size_ + n);
    std::unique_ptr<char[]> grown(new char[capacity]);  // not zeroed
    if (size_ > 0) std::memcpy(grown.get(), data_.get(), size_);
    data_ = std::move(grown);
    capacity_ = capacity;
  }
  return data_.get() + size_;
}

void AppendDetailsLine(const RequestRecord& r, std::string* out) {
  LineBuffer line;
  AppendDetailsLine(r, &line);
  out->append(line.data(), line.size());
}

void AppendDetailsLine(const RequestRecord& r, LineBuffer* out) {
  const bool sent = r.sent();
  const std::string status = StatusName(r.status());
  // Room for the longest line these fields can make: 39 keys with their
  // punctuation and the failure kind's and token counter's labels (< 860
  // bytes), 25 numbers, each ITL value and its comma,
  // the strings escaped at worst (the class and model too, with their keys).
  const size_t room =
      900 + 28 * kMaxNumber + static_cast<size_t>(r.itl_ns_size()) * (kMaxNumber + 1) +
      StringRoom(r.error()) + StringRoom(r.finish_reason()) + StringRoom(r.retry_reason()) +
      StringRoom(status) + StringRoom(r.traffic_class()) + StringRoom(r.model()) + 20;
  LineWriter w(out->Reserve(room));
  // Keys in std::map order, as nlohmann::json's object held them.
  w.Raw("{\"actual_offset_s\":");
  w.SecondsOrNull(sent, r.sent_ns());
  w.Raw(",\"asked_input_tokens\":");
  w.Integer(r.asked_input_tokens());
  w.Raw(",\"attempt\":");
  w.Integer(r.attempt());
  w.Raw(",\"blocked_s\":");
  w.Seconds(r.blocked_ns());
  // Only when the server reported it (usage.prompt_tokens_details), so the
  // lines of a server that does not are as before.
  if (r.cached_tokens_reported()) {
    w.Raw(",\"cached_tokens\":");
    w.Integer(r.cached_tokens());
  }
  w.Raw(",\"catch_up_delay_s\":");
  w.Seconds(r.catch_up_delay_ns());
  // Only in runs with traffic classes, so other runs write the same lines.
  if (!r.traffic_class().empty()) {
    w.Raw(",\"class\":");
    w.String(r.traffic_class());
  }
  w.Raw(",\"e2el_from_planned_s\":");
  w.SecondsOrNull(sent && r.e2el_ns() != 0, FromPlannedNs(r, r.e2el_ns()));
  w.Raw(",\"e2el_s\":");
  w.SecondsOrNull(r.e2el_ns() != 0, r.e2el_ns());
  w.Raw(",\"error\":");
  w.String(r.error());
  // The failure kind as a label ("http_5xx", "not_sent"; "" for ok).
  w.Raw(",\"failure_kind\":");
  w.String(FailureKindLabel(FailureKindOf(r)));
  w.Raw(",\"finish_reason\":");
  if (r.finish_reason().empty()) {
    w.Raw("null");
  } else {
    w.String(r.finish_reason());
  }
  w.Raw(",\"http_retries\":");
  w.Integer(r.http_retries());
  w.Raw(",\"http_status\":");
  w.Integer(r.http_status());
  w.Raw(",\"index\":");
  w.Integer(r.index());
  w.Raw(",\"input_tokens\":");
  w.Integer(r.input_tokens());
  w.Raw(",\"input_tokens_estimated\":");
  w.Bool(r.input_tokens_estimated());
  w.Raw(",\"interrupted_offset_s\":");
  w.SecondsOrNull(r.interrupted_ns() != 0, r.interrupted_ns());
  w.Raw(",\"itl_s\":[");
  bool first = true;
  for (int64_t gap : r.itl_ns()) {
    if (!first) w.Raw(",");
    first = false;
    w.Seconds(gap);
  }
  w.Raw("],\"late\":");
  w.Bool(r.late());
  w.Raw(",\"lateness_s\":");
  w.SecondsOrNull(sent, r.sent_ns() - r.planned_ns());
  w.Raw(",\"max_tokens\":");
  w.Integer(r.max_tokens());
  // Only when the request's class named its own model.
  if (!r.model().empty()) {
    w.Raw(",\"model\":");
    w.String(r.model());
  }
  w.Raw(",\"output_tokens\":");
  w.Integer(r.output_tokens());
  w.Raw(",\"output_tokens_estimated\":");
  w.Bool(r.output_tokens_estimated());
  w.Raw(",\"planned_offset_s\":");
  w.Seconds(r.planned_ns());
  w.Raw(",\"released_offset_s\":");
  w.SecondsOrNull(r.released(), r.released_ns());
  w.Raw(",\"retry_offset_s\":");
  w.SecondsOrNull(r.retry_sent_ns() != 0, r.retry_sent_ns());
  w.Raw(",\"retry_reason\":");
  w.String(r.retry_reason());
  // Only on a session's turns (docs/SESSIONS.md), so other runs write the
  // same lines.
  if (r.in_session()) {
    w.Raw(",\"session\":");
    w.Integer(r.session());
  }
  w.Raw(",\"short_output\":");
  w.Bool(r.short_output());
  w.Raw(",\"status\":");
  w.String(status);
  if (r.in_session()) {
    w.Raw(",\"think_s\":");
    w.Seconds(r.think_ns());
  }
  // The counter that sized the prompt ("estimate", "server", ...).
  w.Raw(",\"token_counter\":");
  w.String(TokenCounterLabel(r.token_counter()));
  w.Raw(",\"ttfc_s\":");
  w.SecondsOrNull(r.ttfc_ns() != 0, r.ttfc_ns());
  w.Raw(",\"ttft_from_planned_s\":");
  w.SecondsOrNull(sent && r.ttft_ns() != 0, FromPlannedNs(r, r.ttft_ns()));
  w.Raw(",\"ttft_s\":");
  w.SecondsOrNull(r.ttft_ns() != 0, r.ttft_ns());
  if (r.in_session()) {
    w.Raw(",\"turn\":");
    w.Integer(r.turn());
  }
  // Only on warm-ups, so a run without them writes the same lines as before.
  if (r.warmup()) w.Raw(",\"warmup\":true");
  w.Raw(",\"worker\":");
  w.Integer(r.worker());
  w.Raw("}\n");
  out->SetEnd(w.end());
}

}  // namespace surge::coordinator
