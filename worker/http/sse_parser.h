// Incremental parser of a Server-Sent Events stream (the body of a streamed
// OpenAI-compatible answer, R-REQ-1, R-MET-1). Pure: bytes in, event
// payloads out; no I/O, no clock.
#ifndef SURGE_WORKER_HTTP_SSE_PARSER_H_
#define SURGE_WORKER_HTTP_SSE_PARSER_H_

#include <string>
#include <string_view>
#include <vector>

namespace surge::worker {

// Splits an SSE byte stream into events and returns each event's `data`
// payload, following the WHATWG event-stream rules that matter here:
//  - lines end with LF, CRLF or a lone CR, and a line ending may be split
//    across Feed() calls (a CR at the end of one call and the LF at the start
//    of the next count as one line ending);
//  - an empty line ends an event; an event without data lines is dropped;
//  - "data:" lines of one event are joined with "\n"; one space after the
//    colon is removed;
//  - lines starting with ":" are comments; other fields (event, id, retry)
//    are ignored;
//  - a UTF-8 byte-order mark at the very start is skipped.
// "[DONE]" is returned like any other payload; the caller recognises it.
// Bytes of an unfinished event are kept until a later Feed() completes it.
// Not thread-safe: one parser per response.
class SseParser {
 public:
  // Consumes `bytes` (any split of the stream) and returns the payloads of
  // the events completed by them, in stream order.
  std::vector<std::string> Feed(std::string_view bytes);

  // Ends the stream (the body ended cleanly): an unterminated last line is
  // taken as a line, and an event with data that no blank line closed is
  // returned (a lenient reading of the spec, which drops it: servers that
  // end with "data: [DONE]\n" mean it). Then the parser is empty.
  std::vector<std::string> Finish();

  // True when bytes of an unfinished line or event are held back.
  bool HasPartialEvent() const { return !line_.empty() || has_data_; }

 private:
  void ProcessLine(std::vector<std::string>& out);

  std::string line_;       // bytes of the current, unterminated line
  std::string data_;       // data of the current event so far
  bool has_data_ = false;  // whether the current event has a data line
  bool skip_lf_ = false;   // last byte seen was a CR: a following LF belongs to it
  bool at_start_ = true;   // nothing consumed yet (for the BOM)
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_SSE_PARSER_H_
