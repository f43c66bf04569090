#include "worker/http/sse_parser.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace surge::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A vLLM-like chat stream with the things servers really send: a comment
// keep-alive, CRLF and LF line ends, a multi-line event, an event field,
// a usage chunk and the [DONE] sentinel.
constexpr char kRecorded[] =
    ": ping\r\n\r\n"
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n"
    "event: message\n"
    "data: {\"choices\":[{\"delta\":\n"
    "data: {\"content\":\"lo\"}}]}\n\n"
    "id: 7\r\n"
    "data:{\"choices\":[],\"usage\":{\"completion_tokens\":2}}\r\n\r\n"
    "data: [DONE]\n\n";

const std::vector<std::string>& Expected() {
  static const auto* expected = new std::vector<std::string>{
      "{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}",
      "{\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}",
      "{\"choices\":[{\"delta\":\n{\"content\":\"lo\"}}]}",
      "{\"choices\":[],\"usage\":{\"completion_tokens\":2}}",
      "[DONE]",
  };
  return *expected;
}

std::vector<std::string> FeedAll(SseParser& parser, std::string_view bytes,
                                 std::vector<std::string> out = {}) {
  for (std::string& event : parser.Feed(bytes)) out.push_back(std::move(event));
  return out;
}

TEST(SseParserTest, WholeRecordedStream) {
  SseParser parser;
  EXPECT_EQ(FeedAll(parser, kRecorded), Expected());
  EXPECT_FALSE(parser.HasPartialEvent());
}

TEST(SseParserTest, SplitAtEveryBytePositionGivesTheSameEvents) {
  const std::string stream = kRecorded;
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser parser;
    std::vector<std::string> events = FeedAll(parser, std::string_view(stream).substr(0, cut));
    events = FeedAll(parser, std::string_view(stream).substr(cut), std::move(events));
    EXPECT_EQ(events, Expected()) << "cut at " << cut;
  }
}

TEST(SseParserTest, SplitIntoThreeAtEveryPairOfPositions) {
  const std::string stream = kRecorded;
  for (size_t a = 0; a <= stream.size(); a += 3) {
    for (size_t b = a; b <= stream.size(); b += 5) {
      SseParser parser;
      std::string_view s(stream);
      std::vector<std::string> events = FeedAll(parser, s.substr(0, a));
      events = FeedAll(parser, s.substr(a, b - a), std::move(events));
      events = FeedAll(parser, s.substr(b), std::move(events));
      ASSERT_EQ(events, Expected()) << "cuts at " << a << ", " << b;
    }
  }
}

TEST(SseParserTest, ByteByByte) {
  SseParser parser;
  std::vector<std::string> events;
  for (char c : std::string(kRecorded)) events = FeedAll(parser, std::string(1, c), events);
  EXPECT_EQ(events, Expected());
}

TEST(SseParserTest, CrLfSplitBetweenCrAndLfIsOneLineEnd) {
  SseParser parser;
  EXPECT_THAT(parser.Feed("data: a\r"), IsEmpty());
  // The LF completes the CR; only the second CRLF ends the event.
  EXPECT_THAT(parser.Feed("\n"), IsEmpty());
  EXPECT_THAT(parser.Feed("\r"), ElementsAre("a"));
  EXPECT_THAT(parser.Feed("\ndata: b\r\n\r\n"), ElementsAre("b"));
}

TEST(SseParserTest, LoneCrEndsLines) {
  SseParser parser;
  EXPECT_THAT(parser.Feed("data: x\r\rdata: y\r\r"), ElementsAre("x", "y"));
}

TEST(SseParserTest, CommentsAndUnknownFieldsAreIgnored) {
  SseParser parser;
  EXPECT_THAT(parser.Feed(":keep-alive\n\n: another\nretry: 10\nevent: e\n\n"), IsEmpty());
  EXPECT_THAT(parser.Feed(": c\ndata: v\n: c2\n\n"), ElementsAre("v"));
}

TEST(SseParserTest, OnlyOneLeadingSpaceIsRemoved) {
  SseParser parser;
  EXPECT_THAT(parser.Feed("data:  two\ndata:none\ndata\n\n"), ElementsAre(" two\nnone\n"));
}

TEST(SseParserTest, UnfinishedEventIsHeldBack) {
  SseParser parser;
  EXPECT_THAT(parser.Feed("data: [DONE]\n"), IsEmpty());
  EXPECT_TRUE(parser.HasPartialEvent());
  EXPECT_THAT(parser.Feed("\n"), ElementsAre("[DONE]"));
  EXPECT_FALSE(parser.HasPartialEvent());
}

TEST(SseParserTest, ByteOrderMarkIsSkippedEvenWhenSplit) {
  SseParser parser;
  EXPECT_THAT(parser.Feed("\xEF"), IsEmpty());
  EXPECT_THAT(parser.Feed("\xBB\xBF"
                          "data: a\n\n"),
              ElementsAre("a"));
}

// At a clean end of the body, an event no blank line closed still counts
// ("data: [DONE]\n" then the end is a complete stream).
TEST(SseParserTest, FinishReturnsTheUnterminatedLastEvent) {
  SseParser a;
  EXPECT_THAT(a.Feed("data: x\n\ndata: [DONE]\n"), ElementsAre("x"));
  EXPECT_THAT(a.Finish(), ElementsAre("[DONE]"));
  EXPECT_FALSE(a.HasPartialEvent());
  SseParser b;  // no line end at all
  EXPECT_THAT(b.Feed("data: [DO"), IsEmpty());
  EXPECT_THAT(b.Feed("NE]"), IsEmpty());
  EXPECT_THAT(b.Finish(), ElementsAre("[DONE]"));
  SseParser c;  // nothing held back: nothing returned
  EXPECT_THAT(c.Feed("data: y\n\n: comment\n"), ElementsAre("y"));
  EXPECT_THAT(c.Finish(), IsEmpty());
}

}  // namespace
}  // namespace surge::worker
