// Failure kinds of request records: the enum
// surge.v1.FailureKind as label text, the kind of an HTTP status, and the
// kind of a record from an older details file that has only the error text.
#ifndef SURGE_COMMON_FAILURE_KIND_H_
#define SURGE_COMMON_FAILURE_KIND_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "surge/v1/record.pb.h"

namespace surge {

// The label of `kind`: its name after "FAILURE_KIND_", lower case
// ("connect", "http_5xx", "not_sent"); "" for UNSPECIFIED. Pure.
std::string FailureKindLabel(surge::v1::FailureKind kind);

// The kind whose FailureKindLabel is `label`; UNSPECIFIED for "" or an
// unknown label. Pure.
surge::v1::FailureKind FailureKindFromLabel(std::string_view label);

// The kind of an HTTP answer with the non-2xx status `http_status`:
// HTTP_4XX for 400..499, HTTP_5XX for 500..599, else HTTP_OTHER. Pure.
surge::v1::FailureKind HttpFailureKind(uint32_t http_status);

// The kind an error text names, for records written before failure_kind
// existed: the text up to its first ':' ("http_503: ..." → HTTP_5XX by the
// digits, "send_unknown: worker 1 lost" → SEND_UNKNOWN, "timeout" →
// TIMEOUT, "sender_shut_down" → NOT_SENT); OTHER for any other non-empty
// text, UNSPECIFIED for "". Pure.
surge::v1::FailureKind FailureKindFromError(std::string_view error);

// The kind of `record`: UNSPECIFIED for OK; else its failure_kind when set,
// otherwise FailureKindFromError(record.error()) (OTHER when that is
// empty). Pure.
surge::v1::FailureKind FailureKindOf(const surge::v1::RequestRecord& record);

// The error text of a 3xx answer that names where it points (its Location
// header, quoted as it is): "http_307: redirect to /v2/completions (not
// followed)". Pure.
std::string RedirectError(uint32_t http_status, std::string_view location);

// The location a RedirectError text names; "" for any other text. Pure.
std::string RedirectLocation(std::string_view error);

// Sets `record`'s status, failure kind and human-readable error in one go
// (the places that decide a failure use it). Pure.
void SetFailure(surge::v1::RequestRecord& record, surge::v1::RequestStatus status,
                surge::v1::FailureKind kind, std::string error);

}  // namespace surge

#endif  // SURGE_COMMON_FAILURE_KIND_H_
