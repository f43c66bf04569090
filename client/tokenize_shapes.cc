#include "client/tokenize_shapes.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace surge::client {
namespace {

using Json = nlohmann::json;

absl::Status NotShape(TokenizeShape shape, std::string_view body) {
  return absl::InvalidArgumentError(absl::StrCat("not a ", TokenizeShapeName(shape),
                                                 " tokenize answer: ", std::string(body.substr(0, 120))));
}

}  // namespace

const char* TokenizeShapeName(TokenizeShape shape) {
  switch (shape) {
    case TokenizeShape::kVllm:
      return "vLLM/SGLang";
    case TokenizeShape::kTgi:
      return "TGI";
    case TokenizeShape::kLlamaCpp:
      return "llama.cpp";
  }
  return "?";
}

std::string TokenizeRequestBody(TokenizeShape shape, const std::string& model, bool chat,
                                std::string_view text) {
  Json body = Json::object();
  switch (shape) {
    case TokenizeShape::kVllm:
      if (!model.empty()) body["model"] = model;
      if (chat) {
        body["messages"] = Json::array({Json{{"role", "user"}, {"content", std::string(text)}}});
      } else {
        body["prompt"] = std::string(text);
      }
      break;
    case TokenizeShape::kTgi:
      body["inputs"] = std::string(text);
      break;
    case TokenizeShape::kLlamaCpp:
      body["content"] = std::string(text);
      break;
  }
  return body.dump();
}

absl::StatusOr<uint32_t> ParseTokenizeCount(TokenizeShape shape, std::string_view body) {
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return NotShape(shape, body);
  switch (shape) {
    case TokenizeShape::kVllm: {
      if (!json.is_object()) break;
      if (auto count = json.find("count"); count != json.end() && count->is_number_unsigned()) {
        return count->get<uint32_t>();
      }
      if (auto tokens = json.find("tokens"); tokens != json.end() && tokens->is_array()) {
        return static_cast<uint32_t>(tokens->size());
      }
      break;
    }
    case TokenizeShape::kTgi:
      if (json.is_array()) return static_cast<uint32_t>(json.size());
      break;
    case TokenizeShape::kLlamaCpp:
      // llama.cpp has no "count"; a vLLM answer has one, and is not this.
      if (json.is_object() && !json.contains("count")) {
        if (auto tokens = json.find("tokens"); tokens != json.end() && tokens->is_array()) {
          return static_cast<uint32_t>(tokens->size());
        }
      }
      break;
  }
  return NotShape(shape, body);
}

std::string TokenizeRoot(std::string_view path_prefix) {
  std::string root(path_prefix);
  if (absl::EndsWith(root, "/v1")) root.resize(root.size() - 3);
  return root;
}

}  // namespace surge::client
