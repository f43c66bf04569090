#include "simserver/answer_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/split_mix.h"

namespace surge::simserver {
namespace {

using Json = nlohmann::json;
using surge::v1::SimServerConfig;

// Largest piece of a split answer, bytes.
constexpr int kSplitMaxPiece = 11;
// Largest max_num_seqs (config.proto's bound).
constexpr uint32_t kMaxMaxNumSeqs = 1 << 20;

// Each fault kind with the SimServerConfig field (config.proto) that holds
// its fraction, in the order the kinds take their slices of [0, 1).
struct FaultField {
  Fault fault;
  const char* field;
};
constexpr FaultField kFaultFields[] = {
    {Fault::k429, "fault_429"},
    {Fault::k500, "fault_500"},
    {Fault::k503, "fault_503"},
    {Fault::kReset, "fault_reset"},
    {Fault::kMalformed, "fault_malformed"},
    {Fault::kStall, "fault_stall"},
    {Fault::kSplit, "fault_split"},
    {Fault::kErrorEvent, "fault_error_event"},
};

double Fraction(const SimServerConfig& config, const char* field) {
  return config.GetReflection()->GetDouble(config,
                                           SimServerConfig::descriptor()->FindFieldByName(field));
}

absl::Status CheckDelay(const char* field, double ms) {
  if (ms >= 0 && std::isfinite(ms)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", ms, " must be a finite number >= 0"));
}

// The queueing model's options: finite step times >= 0, and with the model
// on (max_num_seqs > 0) a step that takes time.
absl::Status CheckQueueingModel(const SimServerConfig& config) {
  if (absl::Status s = CheckDelay("decode_ms_base", config.decode_ms_base()); !s.ok()) return s;
  if (absl::Status s = CheckDelay("decode_ms_per_seq", config.decode_ms_per_seq()); !s.ok()) {
    return s;
  }
  if (config.max_num_seqs() > kMaxMaxNumSeqs) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_num_seqs: ", config.max_num_seqs(), " must be <= ", kMaxMaxNumSeqs));
  }
  if (config.max_num_seqs() > 0 && config.decode_ms_base() + config.decode_ms_per_seq() <= 0) {
    return absl::InvalidArgumentError(
        "decode_ms_base + decode_ms_per_seq must be > 0 with max_num_seqs > 0 (an engine step "
        "takes time)");
  }
  return absl::OkStatus();
}

absl::Status CheckFaultFractions(const SimServerConfig& config) {
  double sum = 0;
  std::vector<std::string> names;
  for (const FaultField& kind : kFaultFields) {
    const double fraction = Fraction(config, kind.field);
    if (!(fraction >= 0 && fraction <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind.field, ": ", fraction, " must be a fraction in [0, 1]"));
    }
    sum += fraction;
    names.push_back(kind.field);
  }
  if (sum > 1 + 1e-9) {
    return absl::InvalidArgumentError(absl::StrCat(absl::StrJoin(names, " + "), " = ", sum,
                                                   " must be <= 1 (one fault per request)"));
  }
  return absl::OkStatus();
}

// Text of one chat message's content: a string, or an array of parts whose
// "text" members are concatenated.
absl::StatusOr<std::string> MessageText(const Json& message) {
  if (!message.is_object()) return absl::InvalidArgumentError("each message must be an object");
  auto content = message.find("content");
  if (content == message.end() || content->is_null()) return std::string();
  if (content->is_string()) return content->get<std::string>();
  if (content->is_array()) {
    std::string text;
    for (const Json& part : *content) {
      if (part.is_object()) {
        auto t = part.find("text");
        if (t != part.end() && t->is_string()) text += t->get<std::string>();
      }
    }
    return text;
  }
  return absl::InvalidArgumentError("message content must be a string or an array of parts");
}

// The prompt token ids of a chat request's "messages", template included
// (sim_tokenizer.h).
absl::StatusOr<std::vector<uint64_t>> ChatPromptIds(const Json& json,
                                                    const SimTokenizer& tokenizer) {
  auto messages = json.find("messages");
  if (messages == json.end() || !messages->is_array() || messages->empty()) {
    return absl::InvalidArgumentError("'messages' must be a non-empty array");
  }
  std::vector<ChatMessage> turns;
  for (const Json& message : *messages) {
    absl::StatusOr<std::string> text = MessageText(message);
    if (!text.ok()) return text.status();
    ChatMessage turn;
    if (auto role = message.find("role"); role != message.end() && role->is_string()) {
      turn.role = role->get<std::string>();
    }
    turn.content = *std::move(text);
    turns.push_back(std::move(turn));
  }
  return tokenizer.TokenizeChat(turns);
}

// The prompt token ids of a completion request's "prompt": a string, a list
// of strings (their ids one after the other), or a list of token ids (taken
// as they are).
absl::StatusOr<std::vector<uint64_t>> CompletionPromptIds(const Json& json,
                                                          const SimTokenizer& tokenizer) {
  auto p = json.find("prompt");
  if (p == json.end()) return absl::InvalidArgumentError("'prompt' is required");
  if (p->is_string()) return tokenizer.Tokenize(p->get_ref<const std::string&>());
  if (!p->is_array()) return absl::InvalidArgumentError("'prompt' must be a string or a list");
  std::vector<uint64_t> ids;
  for (const Json& item : *p) {
    if (item.is_string()) {
      std::vector<uint64_t> part = tokenizer.Tokenize(item.get_ref<const std::string&>());
      ids.insert(ids.end(), part.begin(), part.end());
    } else if (item.is_number_integer()) {
      ids.push_back(item.get<uint64_t>());
    } else {
      return absl::InvalidArgumentError(
          "'prompt' must be a string, a list of strings or a list of token ids");
    }
  }
  return ids;
}

// max_tokens, max_completion_tokens, stream and stream_options into `req`.
absl::Status ReadAnswerShape(const Json& json, CompletionRequest* req) {
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = json.find(key);
    if (it == json.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxMaxTokens) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", key, "' must be an integer in 1..", kMaxMaxTokens));
    }
    req->max_tokens = it->get<int64_t>();  // max_completion_tokens, checked last, wins
  }
  if (auto s = json.find("stream"); s != json.end() && !s->is_null()) {
    if (!s->is_boolean()) return absl::InvalidArgumentError("'stream' must be a boolean");
    req->stream = s->get<bool>();
  }
  if (auto o = json.find("stream_options"); o != json.end() && o->is_object()) {
    auto u = o->find("include_usage");
    if (u != o->end() && u->is_boolean()) req->include_usage = u->get<bool>();
  }
  return absl::OkStatus();
}

// holder["function"]["name"] when it is a string, else "".
std::string FunctionName(const Json& holder) {
  if (!holder.is_object()) return "";
  auto function = holder.find("function");
  if (function == holder.end() || !function->is_object()) return "";
  auto name = function->find("name");
  return name != function->end() && name->is_string() ? name->get<std::string>() : "";
}

// "tools" and "tool_choice" of a chat request into `req`.
absl::Status ReadTools(const Json& json, CompletionRequest* req) {
  auto tools = json.find("tools");
  if (tools == json.end() || tools->is_null()) return absl::OkStatus();
  if (!tools->is_array()) return absl::InvalidArgumentError("'tools' must be an array");
  if (tools->empty()) return absl::OkStatus();
  std::string name;
  if (auto choice = json.find("tool_choice"); choice != json.end()) {
    if (choice->is_string() && choice->get_ref<const std::string&>() == "none") {
      return absl::OkStatus();
    }
    name = FunctionName(*choice);
  }
  if (name.empty()) name = FunctionName((*tools)[0]);
  req->tool_calls = true;
  req->tool_name = name.empty() ? kDefaultToolName : std::move(name);
  return absl::OkStatus();
}

// The arguments of a tool call of `n` tokens, as its stream's pieces add
// up: {"text":"` + (n-1)·kTokenText + `"}, or {} for one token.
std::string ToolArguments(int64_t n) {
  if (n <= 1) return "{}";
  std::string text = "{\"text\":\"";
  for (int64_t i = 1; i < n; ++i) text += kTokenText;
  return text + "\"}";
}

Json UsageJson(const CompletionRequest& req) {
  Json usage = {{"prompt_tokens", req.prompt_tokens},
                {"completion_tokens", req.max_tokens},
                {"total_tokens", req.prompt_tokens + req.max_tokens}};
  if (req.cached_tokens.has_value()) {
    usage["prompt_tokens_details"] = {{"cached_tokens", *req.cached_tokens}};
  }
  return usage;
}

}  // namespace

absl::Status CheckSimServerConfig(const SimServerConfig& config) {
  if (absl::Status s = CheckDelay("ttft_ms", config.ttft_ms()); !s.ok()) return s;
  if (absl::Status s = CheckDelay("itl_ms", config.itl_ms()); !s.ok()) return s;
  if (absl::Status s = CheckDelay("prefill_ms_per_token", config.prefill_ms_per_token()); !s.ok()) {
    return s;
  }
  if (config.threads() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("threads: ", config.threads(), " must be >= 1"));
  }
  if (config.model().empty()) return absl::InvalidArgumentError("model: must not be empty");
  if (config.tls_cert_file().empty() != config.tls_key_file().empty()) {
    return absl::InvalidArgumentError(
        "tls_cert_file and tls_key_file: give both (https) or neither (http)");
  }
  if (absl::Status s = CheckFaultFractions(config); !s.ok()) return s;
  if (absl::Status s = CheckQueueingModel(config); !s.ok()) return s;
  return CheckDelay("fault_stall_ms", config.fault_stall_ms());
}

std::chrono::nanoseconds MsToNanos(double ms) {
  return std::chrono::nanoseconds(std::llround(ms * 1e6));
}

absl::StatusOr<CompletionRequest> ParseCompletionRequest(bool chat, const std::string& body,
                                                         const std::string& default_model,
                                                         const SimTokenizer& tokenizer) {
  Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError("request body is not valid JSON");
  if (!json.is_object()) return absl::InvalidArgumentError("request body must be a JSON object");
  CompletionRequest req;
  req.chat = chat;
  req.model = default_model;
  if (auto m = json.find("model"); m != json.end()) {
    if (!m->is_string()) return absl::InvalidArgumentError("'model' must be a string");
    if (!m->get_ref<const std::string&>().empty()) req.model = m->get<std::string>();
  }
  absl::StatusOr<std::vector<uint64_t>> ids =
      chat ? ChatPromptIds(json, tokenizer) : CompletionPromptIds(json, tokenizer);
  if (!ids.ok()) return ids.status();
  req.prompt_token_ids = *std::move(ids);
  req.prompt_tokens = static_cast<uint32_t>(req.prompt_token_ids.size());
  if (absl::Status s = ReadAnswerShape(json, &req); !s.ok()) return s;
  if (chat) {
    if (absl::Status s = ReadTools(json, &req); !s.ok()) return s;
  }
  return req;
}

std::string ErrorBody(const std::string& message, const char* type, unsigned code) {
  Json body = {{"error", {{"message", message}, {"type", type}, {"code", code}}}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

AnswerWriter::AnswerWriter(const CompletionRequest& req, uint64_t serial, int64_t created_unix_s)
    : req_(req),
      id_(absl::StrCat(req.chat ? "chatcmpl-sim-" : "cmpl-sim-", serial)),
      call_id_(absl::StrCat("call_sim_", serial)),
      created_(created_unix_s) {}

Json AnswerWriter::TokenDelta(int64_t k) const {
  if (!req_.tool_calls) return Json{{"content", kTokenText}};
  const int64_t n = req_.max_tokens;
  Json call = {{"index", 0}};
  if (k == 0) {
    call["id"] = call_id_;
    call["type"] = "function";
    call["function"] = {{"name", req_.tool_name}, {"arguments", n == 1 ? "{}" : "{\"text\":\""}};
  } else {
    std::string piece = kTokenText;
    if (k == n - 1) piece += "\"}";
    call["function"] = {{"arguments", std::move(piece)}};
  }
  return Json{{"tool_calls", Json::array({std::move(call)})}};
}

Json AnswerWriter::ToolCall() const {
  return Json{
      {"id", call_id_},
      {"type", "function"},
      {"function", {{"name", req_.tool_name}, {"arguments", ToolArguments(req_.max_tokens)}}}};
}

std::string AnswerWriter::Chunk(const Json& delta, bool last) const {
  Json choice = {{"index", 0}};
  if (req_.chat) {
    choice["delta"] = delta;
    choice["logprobs"] = nullptr;
  } else {
    choice["text"] = delta.value("content", "");
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] = last ? Json(FinishReason()) : Json(nullptr);
  return Base(req_.chat ? "chat.completion.chunk" : "text_completion", Json::array({choice}))
      .dump();
}

std::string AnswerWriter::UsageChunk() const {
  Json json = Base(req_.chat ? "chat.completion.chunk" : "text_completion", Json::array());
  json["usage"] = UsageJson(req_);
  return json.dump();
}

std::string AnswerWriter::Whole() const {
  std::string text;
  text.reserve(sizeof(kTokenText) * req_.max_tokens);
  for (int64_t i = 0; i < req_.max_tokens; ++i) text += kTokenText;
  Json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", FinishReason()}};
  if (req_.tool_calls) {
    choice["message"] = {
        {"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({ToolCall()})}};
  } else if (req_.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  Json json = Base(req_.chat ? "chat.completion" : "text_completion", Json::array({choice}));
  json["usage"] = UsageJson(req_);
  return json.dump();
}

Json AnswerWriter::Base(const char* object, Json choices) const {
  return Json{{"id", id_},
              {"object", object},
              {"created", created_},
              {"model", req_.model},
              {"choices", std::move(choices)}};
}

TokenEvents::TokenEvents(const AnswerWriter& writer, int64_t max_tokens) : n_(max_tokens) {
  first_ = writer.Chunk(writer.TokenDelta(0), n_ == 1);
  if (n_ > 2) middle_ = writer.Chunk(writer.TokenDelta(1), false);
  if (n_ > 1) last_ = writer.Chunk(writer.TokenDelta(n_ - 1), true);
}

const std::string& TokenEvents::Event(int64_t k) const {
  if (k == 0) return first_;
  return k + 1 == n_ ? last_ : middle_;
}

bool IsMidStream(Fault fault) {
  return fault == Fault::kReset || fault == Fault::kMalformed || fault == Fault::kStall ||
         fault == Fault::kErrorEvent;
}

size_t PieceSizes::Next() {
  state_ += 0x9e3779b97f4a7c15ull;
  return 1 + static_cast<size_t>(SplitMix64(state_) % kSplitMaxPiece);
}

FaultPlan::FaultPlan(const SimServerConfig& config) : seed_(config.fault_seed()) {
  for (const FaultField& kind : kFaultFields) {
    slices_.emplace_back(Fraction(config, kind.field), kind.fault);
  }
}

Fault FaultPlan::Draw(uint64_t n) const {
  const double u = static_cast<double>(SplitMix64(SplitMix64(seed_) + n) >> 11) * 0x1.0p-53;
  double end = 0;
  for (const auto& [fraction, fault] : slices_) {
    end += fraction;
    if (fraction > 0 && u < end) return fault;
  }
  return Fault::kNone;
}

PieceSizes FaultPlan::SplitPieces(uint64_t n) const {
  return PieceSizes(SplitMix64(seed_ ^ SplitMix64(n)));
}

}  // namespace surge::simserver
