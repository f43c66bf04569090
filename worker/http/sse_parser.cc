#include "worker/http/sse_parser.h"

namespace surge::worker {

std::vector<std::string> SseParser::Feed(std::string_view bytes) {
  std::vector<std::string> out;
  if (at_start_ && !bytes.empty()) {
    // The BOM may itself arrive split; keep it in line_ until it is complete.
    static constexpr std::string_view kBom = "\xEF\xBB\xBF";
    while (!bytes.empty() && line_.size() < kBom.size() && bytes[0] == kBom[line_.size()]) {
      line_.push_back(bytes[0]);
      bytes.remove_prefix(1);
    }
    if (line_.size() == kBom.size()) {
      line_.clear();
      at_start_ = false;
    } else if (!bytes.empty()) {
      at_start_ = false;  // not a BOM: what was held back is ordinary line text
    }
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      skip_lf_ = (c == '\r');
      ProcessLine(out);
      continue;
    }
    // Copy the run of ordinary bytes at once.
    size_t end = i;
    while (end < bytes.size() && bytes[end] != '\r' && bytes[end] != '\n') ++end;
    line_.append(bytes.data() + i, end - i);
    i = end - 1;
  }
  return out;
}

std::vector<std::string> SseParser::Finish() {
  std::vector<std::string> out;
  if (!line_.empty()) ProcessLine(out);
  if (has_data_) out.push_back(std::move(data_));
  data_.clear();
  has_data_ = false;
  skip_lf_ = false;
  return out;
}

void SseParser::ProcessLine(std::vector<std::string>& out) {
  if (line_.empty()) {
    if (has_data_) out.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line_[0] != ':') {
    std::string_view line(line_);
    const size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
    }
  }
  line_.clear();
}

}  // namespace surge::worker
