#include "coordinator/dataset/file_datasets.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/prompt_builder.h"
#include "common/utf8.h"
#include "coordinator/dataset/length_distribution.h"

namespace surge::coordinator {
namespace {

using Json = nlohmann::json;

absl::Status CannotOpen(const std::string& path) {
  return absl::InvalidArgumentError(absl::StrCat("invalid configuration:\n  dataset_path = \"",
                                                 path, "\": cannot open the file"));
}

bool IsBlank(const std::string& line) {
  return line.find_first_not_of(" \t\r") == std::string::npos;
}

// A whole number of tokens in [min, kMaxDrawnTokens].
absl::StatusOr<uint32_t> ReadTokens(const Json& row, const char* key, int64_t min,
                                    const std::string& where) {
  auto it = row.find(key);
  if (it == row.end() || !it->is_number_integer() || it->get<int64_t>() < min ||
      it->get<int64_t>() > static_cast<int64_t>(kMaxDrawnTokens)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": \"", key, "\" must be a whole number of tokens, ", min, "..", kMaxDrawnTokens));
  }
  return static_cast<uint32_t>(it->get<int64_t>());
}

// The text of one OpenAI message content: a string, or a list of parts of
// which the "text" ones are joined (other part kinds are an error).
absl::StatusOr<std::string> ContentText(const Json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) {
    std::string text;
    for (const Json& part : content) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
          !part["text"].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where,
                         ": only text content parts ({\"type\": \"text\", \"text\": "
                         "...}) are supported"));
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": must be a string or a list of text parts"));
}

// A chat list as one prompt text: every message's content, in order, joined
// by a blank line (roles dropped). Empty contents are left out.
absl::StatusOr<std::string> MessagesText(const Json& messages, const std::string& where) {
  if (!messages.is_array() || messages.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": \"messages\" must be a non-empty list of chat messages"));
  }
  std::string text;
  for (size_t k = 0; k < messages.size(); ++k) {
    const Json& m = messages[k];
    const std::string field = absl::StrCat(where, ": messages[", k, "].content");
    if (!m.is_object() || !m.contains("content")) {
      return absl::InvalidArgumentError(absl::StrCat(field, " is missing"));
    }
    auto part = ContentText(m["content"], field);
    if (!part.ok()) return part.status();
    if (part->empty()) continue;
    if (!text.empty()) text += "\n\n";
    text += *part;
  }
  return text;
}

// Streams the elements of a top-level JSON array to a callback, one DOM per
// element, so that a ShareGPT file of hundreds of MB is never held whole.
class ArrayElementSax final : public nlohmann::json_sax<Json> {
 public:
  // Returns false to stop reading (enough elements, or an error it keeps).
  using Callback = std::function<bool(Json&& element)>;
  explicit ArrayElementSax(Callback callback) : callback_(std::move(callback)) {}

  bool null() override { return Value(nullptr); }
  bool boolean(bool v) override { return Value(v); }
  bool number_integer(number_integer_t v) override { return Value(v); }
  bool number_unsigned(number_unsigned_t v) override { return Value(v); }
  bool number_float(number_float_t v, const string_t&) override { return Value(v); }
  bool string(string_t& v) override { return Value(std::move(v)); }
  bool binary(binary_t& v) override { return Value(Json::binary(std::move(v))); }
  bool start_object(std::size_t) override {
    if (!in_root_) return NotAnArray();
    return Open(Json::object());
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override {
    if (!in_root_) {
      if (root_done_) return NotAnArray();
      in_root_ = true;
      return true;
    }
    return Open(Json::array());
  }
  bool end_array() override {
    if (stack_.empty()) {
      in_root_ = false;
      root_done_ = true;
      return true;
    }
    return Close();
  }
  bool parse_error(std::size_t position, const std::string&, const Json::exception& e) override {
    syntax_error_ = true;
    error_position_ = position;
    error_text_ = e.what();
    return false;
  }

  bool syntax_error() const { return syntax_error_; }
  bool not_an_array() const { return not_an_array_; }
  std::size_t error_position() const { return error_position_; }
  const std::string& error_text() const { return error_text_; }
  bool saw_root() const { return in_root_ || root_done_; }

 private:
  bool NotAnArray() {
    not_an_array_ = true;
    return false;
  }
  bool Value(Json v) {
    if (!in_root_) return NotAnArray();
    if (stack_.empty()) return callback_(std::move(v));  // a scalar element
    Insert(std::move(v));
    return true;
  }
  bool Open(Json v) {
    if (stack_.empty()) {
      current_ = std::move(v);
      stack_.push_back(&current_);
    } else {
      stack_.push_back(Insert(std::move(v)));
    }
    return true;
  }
  bool Close() {
    stack_.pop_back();
    if (stack_.empty()) return callback_(std::move(current_));
    return true;
  }
  // Adds `v` to the innermost open container; returns where it now lives.
  // Only the innermost container grows, so pointers to its ancestors stay.
  Json* Insert(Json v) {
    Json* parent = stack_.back();
    if (parent->is_object()) {
      Json& slot = (*parent)[key_];
      slot = std::move(v);
      return &slot;
    }
    parent->push_back(std::move(v));
    return &parent->back();
  }

  Callback callback_;
  Json current_;
  std::vector<Json*> stack_;
  std::string key_;
  bool in_root_ = false;
  bool root_done_ = false;
  bool syntax_error_ = false;
  bool not_an_array_ = false;
  std::size_t error_position_ = 0;
  std::string error_text_;
};

// 1-based line of byte `position` of the file.
uint64_t LineOfByte(const std::string& path, std::size_t position) {
  std::ifstream in(path, std::ios::binary);
  uint64_t line = 1;
  char c;
  for (std::size_t i = 0; i < position && in.get(c); ++i) line += (c == '\n');
  return line;
}

// Reads the JSONL file at `path` until `out` holds `max_rows` rows (only the
// first N lines are needed: a run of 2,000 requests does not parse a trace of
// millions). Blank lines are skipped; every other line must be a JSON object
// and goes to `add_row(row, where, line_no)`, which appends to `out` or
// returns the error that ends the reading. Errors name the file and the line;
// a file that gives no rows is an error too.
absl::Status ForEachJsonObjectLine(
    const std::string& path, uint64_t max_rows, const DatasetRows& out,
    const std::function<absl::Status(const Json&, const std::string&, uint64_t)>& add_row) {
  std::ifstream in(path);
  if (!in) return CannotOpen(path);
  std::string line;
  uint64_t line_no = 0;
  while (out.rows.size() < max_rows && std::getline(in, line)) {
    ++line_no;
    if (IsBlank(line)) continue;
    const std::string where = absl::StrCat("dataset_path ", path, " line ", line_no);
    const Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() && !IsValidUtf8(line)) {
      // JSON text is UTF-8; say so rather than "not JSON" for one stray byte.
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": not valid UTF-8 text (JSON must be UTF-8): \"", ToValidUtf8(line, 80), "\""));
    }
    if (row.is_discarded() || !row.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": not a JSON object"));
    }
    if (absl::Status s = add_row(row, where, line_no); !s.ok()) return s;
  }
  if (out.rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset_path ", path, ": no requests in the file"));
  }
  return absl::OkStatus();
}

// A checked conversation: its turns, moved out of the element's DOM.
absl::StatusOr<std::vector<ShareGptTurn>> ConversationTurns(Json&& conv, const std::string& where) {
  if (!conv.is_object() || !conv.contains("conversations") || !conv["conversations"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": must be an object with a \"conversations\" list"));
  }
  Json& list = conv["conversations"];
  std::vector<ShareGptTurn> turns;
  turns.reserve(list.size());
  for (size_t t = 0; t < list.size(); ++t) {
    Json& turn = list[t];
    if (!turn.is_object() || !turn.contains("from") || !turn["from"].is_string() ||
        !turn.contains("value") || !turn["value"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": conversations[", t, "] must be {\"from\": string, \"value\": string}"));
    }
    turns.push_back(ShareGptTurn{std::move(turn["from"].get_ref<std::string&>()),
                                 std::move(turn["value"].get_ref<std::string&>())});
  }
  return turns;
}

}  // namespace

uint64_t PromptSeed(uint64_t seed, uint64_t index) { return seed * 1000003ULL + index * 7919ULL; }

uint64_t SessionTurnIndex(uint64_t session, uint32_t turn) {
  return session * kMaxSessionTurns + turn;
}

absl::Status CheckDatasetFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid configuration:\n  dataset_path = \"", path,
      "\": ", std::filesystem::exists(path, ec) ? "is not a regular file" : "no such file",
      " (flag --dataset-path)"));
}

absl::StatusOr<DatasetRows> ReadJsonlRows(const std::string& path, uint64_t max_rows,
                                          uint32_t default_max_tokens, uint64_t seed) {
  DatasetRows out;
  absl::Status status = ForEachJsonObjectLine(
      path, max_rows, out,
      [&](const Json& row, const std::string& where, uint64_t line_no) -> absl::Status {
        const bool has_prompt = row.contains("prompt");
        const bool has_messages = row.contains("messages");
        if (has_prompt == has_messages) {
          return absl::InvalidArgumentError(
              absl::StrCat(where,
                           ": needs exactly one of \"prompt\" (a string) or \"messages\" "
                           "(an OpenAI chat list)"));
        }
        std::string text;
        if (has_prompt) {
          if (!row["prompt"].is_string()) {
            return absl::InvalidArgumentError(absl::StrCat(where, ": \"prompt\" must be a string"));
          }
          text = row["prompt"].get<std::string>();
        } else {
          auto joined = MessagesText(row["messages"], where);
          if (!joined.ok()) return joined.status();
          text = *std::move(joined);
        }
        if (text.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": the prompt is empty"));
        }
        uint32_t max_tokens = default_max_tokens;
        if (row.contains("max_tokens")) {
          auto m = ReadTokens(row, "max_tokens", 1, where);
          if (!m.ok()) return m.status();
          max_tokens = *m;
        }
        Payload p(EstimateTokens(text), max_tokens, PromptSeed(seed, out.rows.size()));
        p.prompt_text = std::move(text);
        out.rows.push_back(std::move(p));
        out.lines.push_back(line_no);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return out;
}

bool IsShareGptHumanRole(const std::string& from) { return from == "human" || from == "user"; }

uint32_t ShareGptAnswerTokens(const std::vector<ShareGptTurn>& turns, size_t human,
                              uint32_t default_max_tokens) {
  if (human + 1 >= turns.size()) return default_max_tokens;
  const ShareGptTurn& next = turns[human + 1];
  const uint32_t answer = EstimateTokens(next.value);
  if (IsShareGptHumanRole(next.from) || next.from == "system" || answer == 0) {
    return default_max_tokens;
  }
  return std::min(answer, kMaxDrawnTokens);
}

absl::Status ForEachShareGptConversation(
    const std::string& path,
    const std::function<bool(uint64_t, std::vector<ShareGptTurn>&&)>& on_conversation) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return CannotOpen(path);
  absl::Status error;
  uint64_t element = 0;
  auto on_element = [&](Json&& conv) -> bool {
    const uint64_t k = element++;
    const std::string where =
        absl::StrCat("dataset_path ", path, " conversation ", k, " (0-based element of the array)");
    absl::StatusOr<std::vector<ShareGptTurn>> turns = ConversationTurns(std::move(conv), where);
    if (!turns.ok()) {
      error = turns.status();
      return false;
    }
    return on_conversation(k, *std::move(turns));
  };
  ArrayElementSax sax(on_element);
  Json::sax_parse(in, &sax);  // false when stopped early or on an error, told apart below
  if (!error.ok()) return error;
  if (sax.not_an_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset_path ", path, ": a ShareGPT file must be one JSON array of conversations"));
  }
  if (sax.syntax_error()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset_path ", path, " line ", LineOfByte(path, sax.error_position()),
                     ": not valid JSON: ", ToValidUtf8(sax.error_text())));
  }
  return absl::OkStatus();
}

namespace {

// Reads the ShareGPT file at `path` until `max_used` conversations were
// used: `use(element, turns)` takes a conversation (true) or finds no
// non-empty human turn in it (false). Those not used are counted in one
// warning; a file with none used is an error.
absl::Status ReadUsableConversations(
    const std::string& path, uint64_t max_used,
    const std::function<bool(uint64_t, std::vector<ShareGptTurn>&&)>& use,
    std::vector<std::string>& warnings) {
  uint64_t used = 0;
  uint64_t skipped = 0;
  absl::Status status =
      ForEachShareGptConversation(path, [&](uint64_t element, std::vector<ShareGptTurn>&& turns) {
        if (!use(element, std::move(turns))) {
          ++skipped;
          return true;
        }
        return ++used < max_used;
      });
  if (!status.ok()) return status;
  if (skipped > 0) {
    warnings.push_back(absl::StrCat("dataset ", path, ": ", skipped,
                                    skipped == 1 ? " conversation" : " conversations",
                                    " without a non-empty human turn skipped"));
  }
  if (used == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset_path ", path, ": no conversation with a human turn in the file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DatasetRows> ReadShareGptRows(const std::string& path, uint64_t max_rows,
                                             uint32_t default_max_tokens, uint64_t seed) {
  DatasetRows out;
  auto use = [&](uint64_t element, std::vector<ShareGptTurn>&& turns) {
    size_t human = 0;
    while (human < turns.size() && !IsShareGptHumanRole(turns[human].from)) ++human;
    if (human == turns.size() || turns[human].value.empty()) return false;
    Payload p(EstimateTokens(turns[human].value),
              ShareGptAnswerTokens(turns, human, default_max_tokens),
              PromptSeed(seed, out.rows.size()));
    p.prompt_text = std::move(turns[human].value);
    out.rows.push_back(std::move(p));
    out.lines.push_back(element);
    return true;
  };
  if (absl::Status s = ReadUsableConversations(path, max_rows, use, out.warnings); !s.ok()) {
    return s;
  }
  return out;
}

absl::StatusOr<SessionRows> ReadShareGptSessions(const std::string& path, uint64_t max_sessions,
                                                 uint32_t default_max_tokens, uint64_t seed) {
  SessionRows out;
  auto use = [&](uint64_t element, std::vector<ShareGptTurn>&& turns) {
    const uint64_t row = out.sessions.size();
    std::vector<Payload> session;
    for (size_t t = 0; t < turns.size(); ++t) {
      if (!IsShareGptHumanRole(turns[t].from) || turns[t].value.empty()) continue;
      const auto k = static_cast<uint32_t>(session.size());
      Payload p(EstimateTokens(turns[t].value), ShareGptAnswerTokens(turns, t, default_max_tokens),
                PromptSeed(seed, SessionTurnIndex(row, k)));
      p.prompt_text = std::move(turns[t].value);
      session.push_back(std::move(p));
    }
    if (session.empty()) return false;
    out.sessions.push_back(std::move(session));
    out.elements.push_back(element);
    return true;
  };
  if (absl::Status s = ReadUsableConversations(path, max_sessions, use, out.warnings); !s.ok()) {
    return s;
  }
  return out;
}

absl::StatusOr<DatasetRows> ReadMooncakeRows(const std::string& path, uint64_t max_rows,
                                             uint64_t seed, bool with_timestamps) {
  DatasetRows out;
  absl::Status status = ForEachJsonObjectLine(
      path, max_rows, out,
      [&](const Json& row, const std::string& where, uint64_t line_no) -> absl::Status {
        auto input = ReadTokens(row, "input_length", 0, where);
        if (!input.ok()) return input.status();
        auto output = ReadTokens(row, "output_length", 0, where);
        if (!output.ok()) return output.status();
        // max_tokens 0 is rejected by OpenAI-compatible servers; such trace rows
        // ask for one token.
        Payload p(*input, std::max<uint32_t>(*output, 1), PromptSeed(seed, out.rows.size()));
        if (auto it = row.find("hash_ids"); it != row.end()) {
          bool ok = it->is_array();
          if (ok) {
            p.prefix_block_ids.reserve(it->size());
            for (const Json& id : *it) {
              if (!id.is_number_integer() || id.get<int64_t>() < 0) {
                ok = false;
                break;
              }
              p.prefix_block_ids.push_back(id.get<uint64_t>());
            }
          }
          if (!ok) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": \"hash_ids\" must be a list of whole numbers >= 0"));
          }
        }
        if (with_timestamps) {
          auto it = row.find("timestamp");
          if (it == row.end() || !it->is_number() || !std::isfinite(it->get<double>())) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, ": \"timestamp\" (ms) must be a number for trace replay (trace_replay)"));
          }
          out.timestamps_ms.push_back(it->get<double>());
        }
        out.rows.push_back(std::move(p));
        out.lines.push_back(line_no);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return out;
}

}  // namespace surge::coordinator
