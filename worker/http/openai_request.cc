#include "worker/http/openai_request.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"

namespace surge::worker {
namespace {

using Json = nlohmann::json;

// Bytes of a bad event or answer quoted in the error.
constexpr size_t kQuotedBytes = 120;
// Bytes of a server's error message kept.
constexpr size_t kServerMessageBytes = 200;

// Reads a non-negative integer member; nullopt when absent or of another type.
std::optional<uint32_t> ReadCount(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_unsigned()) return static_cast<uint32_t>(it->get<uint64_t>());
  if (it->is_number_integer()) {
    const int64_t v = it->get<int64_t>();
    return v < 0 ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(v));
  }
  const double v = it->get<double>();
  return v < 0 ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(v));
}

// Appends the string value of object[key] when it is a non-empty string.
bool AppendString(const Json& object, const char* key, std::string& out) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return false;
  const auto& s = it->get_ref<const std::string&>();
  if (s.empty()) return false;
  out += s;
  return true;
}

// Appends the generated text of a delta's or message's "tool_calls": each
// call's function name and arguments (a stream sends the name first, then
// the arguments in pieces). Ids and types are not generated text.
void AppendToolCalls(const Json& inner, std::string& out) {
  auto calls = inner.find("tool_calls");
  if (calls == inner.end() || !calls->is_array()) return;
  for (const Json& call : *calls) {
    if (!call.is_object()) continue;
    auto function = call.find("function");
    if (function == call.end() || !function->is_object()) continue;
    AppendString(*function, "name", out);
    AppendString(*function, "arguments", out);
  }
}

// Shared by events and whole answers: `field` is "delta" for chunks and
// "message" for chat answers.
absl::StatusOr<ParsedAnswer> Parse(ApiKind kind, std::string_view text, const char* field,
                                   bool whole) {
  Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("bad JSON in ", whole ? "answer" : "event", ": ",
                                                   ToValidUtf8(text, kQuotedBytes)));
  }
  ParsedAnswer answer;
  if (auto err = json.find("error"); err != json.end() && !err->is_null()) {
    std::string message = err->dump();
    if (err->is_object()) {
      auto m = err->find("message");
      if (m != err->end() && m->is_string()) message = m->get<std::string>();
    } else if (err->is_string()) {
      message = err->get<std::string>();
    }
    return absl::InternalError(
        absl::StrCat("server error: ", ToValidUtf8(message, kServerMessageBytes)));
  }
  bool has_choices = false;
  if (auto choices = json.find("choices"); choices != json.end() && choices->is_array()) {
    has_choices = true;
    if (!choices->empty() && (*choices)[0].is_object()) {
      const Json& choice = (*choices)[0];
      if (kind == ApiKind::kChat) {
        auto inner = choice.find(field);
        if (inner != choice.end() && inner->is_object()) {
          // Reasoning models stream their thinking first; it is generated
          // output, so it counts for TTFT like vLLM's benchmark does, but not
          // for TTFC (the first token of the answer proper).
          if (!AppendString(*inner, "reasoning_content", answer.content)) {
            AppendString(*inner, "reasoning", answer.content);
          }
          const size_t reasoning_bytes = answer.content.size();
          AppendString(*inner, "content", answer.content);
          AppendToolCalls(*inner, answer.content);
          answer.answer_bytes = answer.content.size() - reasoning_bytes;
        }
      } else {
        AppendString(choice, "text", answer.content);
        answer.answer_bytes = answer.content.size();
      }
      if (auto reason = choice.find("finish_reason");
          reason != choice.end() && reason->is_string()) {
        answer.finished = true;
        answer.finish_reason = ToValidUtf8(reason->get<std::string>(), kQuotedBytes);
      }
      if (auto index = ReadCount(choice, "index"); index.has_value()) {
        answer.choice_index = *index;
      }
    }
  }
  if (auto usage = json.find("usage"); usage != json.end() && usage->is_object()) {
    auto completion = ReadCount(*usage, "completion_tokens");
    if (completion.has_value()) {
      answer.usage =
          Usage{ReadCount(*usage, "prompt_tokens").value_or(0), *completion, std::nullopt};
      if (auto details = usage->find("prompt_tokens_details");
          details != usage->end() && details->is_object()) {
        answer.usage->cached_tokens = ReadCount(*details, "cached_tokens");
      }
    }
  }
  if (whole && !has_choices && !answer.usage.has_value()) {
    return absl::InvalidArgumentError("no choices in answer");
  }
  return answer;
}

}  // namespace

ApiKind ApiKindForEndpoint(std::string_view endpoint) {
  constexpr std::string_view kChatSuffix = "/chat/completions";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.remove_suffix(1);
  return endpoint.size() >= kChatSuffix.size() &&
                 endpoint.substr(endpoint.size() - kChatSuffix.size()) == kChatSuffix
             ? ApiKind::kChat
             : ApiKind::kCompletions;
}

std::string BuildRequestBody(ApiKind kind, const std::string& model, const std::string& prompt,
                             uint32_t max_tokens, bool stream, const nlohmann::json* extra,
                             const std::vector<HistoryMessage>& history) {
  Json body = Json::object();
  if (!model.empty()) body["model"] = model;
  if (kind == ApiKind::kChat) {
    Json messages = Json::array();
    for (const HistoryMessage& m : history) {
      messages.push_back(Json{{"role", std::string(m.role)}, {"content", std::string(m.content)}});
    }
    messages.push_back(Json{{"role", "user"}, {"content", prompt}});
    body["messages"] = std::move(messages);
  } else if (history.empty()) {
    body["prompt"] = prompt;
  } else {
    std::string text;
    for (const HistoryMessage& m : history) text.append(m.content).append("\n\n");
    body["prompt"] = text.append(prompt);
  }
  body["max_tokens"] = max_tokens;
  body["stream"] = stream;
  if (stream) body["stream_options"] = Json{{"include_usage", true}};
  if (extra != nullptr && extra->is_object()) body.merge_patch(*extra);
  // Replace invalid UTF-8 rather than throw: prompts come from datasets.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

uint32_t RequestedMaxTokens(uint32_t max_tokens, const nlohmann::json* extra) {
  if (extra == nullptr || !extra->is_object()) return max_tokens;
  if (auto v = ReadCount(*extra, "max_completion_tokens"); v.has_value()) return *v;
  if (auto it = extra->find("max_tokens"); it != extra->end()) {
    if (it->is_null()) return 0;
    if (auto v = ReadCount(*extra, "max_tokens"); v.has_value()) return *v;
  }
  return max_tokens;
}

bool AsksIgnoreEos(const nlohmann::json* extra) {
  if (extra == nullptr || !extra->is_object()) return false;
  auto it = extra->find("ignore_eos");
  return it != extra->end() && it->is_boolean() && it->get<bool>();
}

absl::StatusOr<ParsedAnswer> ParseStreamEvent(ApiKind kind, std::string_view data) {
  try {
    return Parse(kind, data, "delta", /*whole=*/false);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad event: ", e.what()));
  }
}

absl::StatusOr<ParsedAnswer> ParseCompletionBody(ApiKind kind, std::string_view body) {
  try {
    return Parse(kind, body, "message", /*whole=*/true);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad answer: ", e.what()));
  }
}

}  // namespace surge::worker
