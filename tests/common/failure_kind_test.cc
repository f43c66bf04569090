// Failure kinds: the enum is the kind; older details files
// without it get the kind from their error text's prefix.
#include "common/failure_kind.h"

#include <gtest/gtest.h>

#include <string>

namespace surge {
namespace {

using surge::v1::FailureKind;

TEST(FailureKindTest, LabelIsTheNameAfterThePrefixInLowerCase) {
  EXPECT_EQ(FailureKindLabel(surge::v1::FAILURE_KIND_UNSPECIFIED), "");
  EXPECT_EQ(FailureKindLabel(surge::v1::FAILURE_KIND_CONNECT), "connect");
  EXPECT_EQ(FailureKindLabel(surge::v1::FAILURE_KIND_HTTP_5XX), "http_5xx");
  EXPECT_EQ(FailureKindLabel(surge::v1::FAILURE_KIND_CONNECTION_CLOSED), "connection_closed");
  EXPECT_EQ(FailureKindLabel(surge::v1::FAILURE_KIND_SKIPPED_LATE), "skipped_late");
}

TEST(FailureKindTest, EveryKindReadsBackFromItsLabel) {
  const auto* descriptor = surge::v1::FailureKind_descriptor();
  ASSERT_GE(descriptor->value_count(), 26);
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto kind = static_cast<FailureKind>(descriptor->value(i)->number());
    EXPECT_EQ(FailureKindFromLabel(FailureKindLabel(kind)), kind) << descriptor->value(i)->name();
  }
  EXPECT_EQ(FailureKindFromLabel("no_such_kind"), surge::v1::FAILURE_KIND_UNSPECIFIED);
  EXPECT_EQ(FailureKindFromLabel("HTTP_5XX"), surge::v1::FAILURE_KIND_HTTP_5XX);
}

TEST(FailureKindTest, HttpStatusClasses) {
  EXPECT_EQ(HttpFailureKind(399), surge::v1::FAILURE_KIND_HTTP_OTHER);
  EXPECT_EQ(HttpFailureKind(400), surge::v1::FAILURE_KIND_HTTP_4XX);
  EXPECT_EQ(HttpFailureKind(429), surge::v1::FAILURE_KIND_HTTP_4XX);
  EXPECT_EQ(HttpFailureKind(499), surge::v1::FAILURE_KIND_HTTP_4XX);
  EXPECT_EQ(HttpFailureKind(500), surge::v1::FAILURE_KIND_HTTP_5XX);
  EXPECT_EQ(HttpFailureKind(599), surge::v1::FAILURE_KIND_HTTP_5XX);
  EXPECT_EQ(HttpFailureKind(600), surge::v1::FAILURE_KIND_HTTP_OTHER);
  EXPECT_EQ(HttpFailureKind(302), surge::v1::FAILURE_KIND_HTTP_OTHER);
}

// The error texts the worker and the coordinator write (worker/http,
// worker/send_loop, worker/worker_session, coordinator/dispatch/
// request_ledger, app/commands), as an older details file holds them.
TEST(FailureKindTest, OlderErrorTextsGetTheirKindFromThePrefix) {
  struct Case {
    const char* error;
    FailureKind kind;
  };
  const Case cases[] = {
      {"connect: Connection refused", surge::v1::FAILURE_KIND_CONNECT},
      {"tls: certificate verify failed", surge::v1::FAILURE_KIND_TLS},
      {"send: Broken pipe", surge::v1::FAILURE_KIND_SEND},
      {"connection_closed: end of stream", surge::v1::FAILURE_KIND_CONNECTION_CLOSED},
      {"timeout", surge::v1::FAILURE_KIND_TIMEOUT},
      {"http_429: {\"error\": \"slow down\"}", surge::v1::FAILURE_KIND_HTTP_4XX},
      {"http_503: overloaded", surge::v1::FAILURE_KIND_HTTP_5XX},
      {"http_302: ", surge::v1::FAILURE_KIND_HTTP_OTHER},
      {"stream_error: {\"message\": \"boom\"}", surge::v1::FAILURE_KIND_STREAM_ERROR},
      {"bad_chunk: not JSON", surge::v1::FAILURE_KIND_BAD_CHUNK},
      {"closed_mid_stream", surge::v1::FAILURE_KIND_CLOSED_MID_STREAM},
      {"incomplete_stream", surge::v1::FAILURE_KIND_INCOMPLETE_STREAM},
      {"incomplete_body", surge::v1::FAILURE_KIND_INCOMPLETE_BODY},
      {"no_content", surge::v1::FAILURE_KIND_NO_CONTENT},
      {"bad_response: no choices", surge::v1::FAILURE_KIND_BAD_RESPONSE},
      {"multiple_choices: an event of choice 1", surge::v1::FAILURE_KIND_MULTIPLE_CHOICES},
      {"internal: bad_alloc", surge::v1::FAILURE_KIND_INTERNAL},
      {"interrupted: cut_off_at_stop", surge::v1::FAILURE_KIND_INTERRUPTED},
      {"interrupted: no_record", surge::v1::FAILURE_KIND_INTERRUPTED},
      {"not_sent: interrupted", surge::v1::FAILURE_KIND_NOT_SENT},
      {"not_sent: stopped_before_first_byte", surge::v1::FAILURE_KIND_NOT_SENT},
      {"sender_shut_down", surge::v1::FAILURE_KIND_NOT_SENT},
      {"send_unknown: worker 1 lost (silent for 1500 ms)", surge::v1::FAILURE_KIND_SEND_UNKNOWN},
      {"record_lost: worker 0 has been idle", surge::v1::FAILURE_KIND_RECORD_LOST},
      {"lost: no_record_before_drain_deadline", surge::v1::FAILURE_KIND_LOST},
      {"skipped_late: reached 45.000 ms after", surge::v1::FAILURE_KIND_SKIPPED_LATE},
      {"no_record: the run ended before", surge::v1::FAILURE_KIND_NO_RECORD},
      // Unknown prefixes, and labels that are no error prefix, are OTHER.
      {"something new: whatever", surge::v1::FAILURE_KIND_OTHER},
      {"http_5xx: x", surge::v1::FAILURE_KIND_OTHER},
      {"http_abc: x", surge::v1::FAILURE_KIND_OTHER},
      {"other", surge::v1::FAILURE_KIND_OTHER},
      {"", surge::v1::FAILURE_KIND_UNSPECIFIED},
  };
  for (const Case& c : cases) EXPECT_EQ(FailureKindFromError(c.error), c.kind) << c.error;
}

TEST(FailureKindTest, KindOfARecordPrefersTheEnum) {
  surge::v1::RequestRecord r;
  r.set_status(surge::v1::OK);
  EXPECT_EQ(FailureKindOf(r), surge::v1::FAILURE_KIND_UNSPECIFIED);
  // The enum wins over the text (the text is for people).
  SetFailure(r, surge::v1::FAILED, surge::v1::FAILURE_KIND_TLS, "cannot load the CA file");
  EXPECT_EQ(r.status(), surge::v1::FAILED);
  EXPECT_EQ(r.error(), "cannot load the CA file");
  EXPECT_EQ(FailureKindOf(r), surge::v1::FAILURE_KIND_TLS);
  // Without it (an older file): from the text; no text: OTHER.
  r.clear_failure_kind();
  EXPECT_EQ(FailureKindOf(r), surge::v1::FAILURE_KIND_OTHER);
  r.set_error("timeout");
  EXPECT_EQ(FailureKindOf(r), surge::v1::FAILURE_KIND_TIMEOUT);
  r.set_error("");
  EXPECT_EQ(FailureKindOf(r), surge::v1::FAILURE_KIND_OTHER);
}

}  // namespace
}  // namespace surge
