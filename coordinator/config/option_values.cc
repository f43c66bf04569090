// One value of a field as the option table reads, writes, checks and
// describes it (option_values.h).
#include "coordinator/config/option_values.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/enum_spelling.h"
#include "common/utf8.h"

namespace surge::coordinator {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using surge::v1::OptionSpec;

namespace {

// A text that is no spelling of the field's enum leaves this number in the
// field (proto3 enums are open), so that the field counts as given, and the
// text itself among the holder's unknown fields under the field's number,
// so that CheckValue reports it in field order, as a text with allowed
// values was; no enum of config.proto has this number.
constexpr int kUnknownEnumValue = -1;

// The text kept for a field holding kUnknownEnumValue (SetScalar).
std::string UnknownEnumText(const Message& holder, const FieldDescriptor* f) {
  const google::protobuf::UnknownFieldSet& unknown =
      holder.GetReflection()->GetUnknownFields(holder);
  std::string text;
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& u = unknown.field(i);
    if (u.number() == f->number() &&
        u.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      text = u.length_delimited();
    }
  }
  return text;
}

}  // namespace

std::string EnumText(const Message& holder, const FieldDescriptor* f) {
  const int number = holder.GetReflection()->GetEnumValue(holder, f);
  const google::protobuf::EnumValueDescriptor* value = f->enum_type()->FindValueByNumber(number);
  return value != nullptr ? EnumSpelling(value) : UnknownEnumText(holder, f);
}

bool IsNumber(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

bool IsFloating(const FieldDescriptor* f) {
  return f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
         f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT;
}

bool IsMessage(const FieldDescriptor* f) {
  return f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
}

// The value of `type` spelled `text` (common/enum_spelling.h); an empty
// text is the value spelled "", else the zero value. Null: no such value.
const google::protobuf::EnumValueDescriptor* EnumValueSpelled(
    const google::protobuf::EnumDescriptor* type, const std::string& text) {
  for (int i = 0; i < type->value_count(); ++i) {
    if (EnumSpelling(type->value(i)) == text) return type->value(i);
  }
  return text.empty() ? type->FindValueByNumber(0) : nullptr;
}

std::string Quoted(const std::string& text) { return absl::StrCat("\"", ToValidUtf8(text), "\""); }

std::string NumberText(double v) { return absl::StrCat(v); }

bool ParseBool(const std::string& text, bool* out) {
  const std::string s = absl::AsciiStrToLower(text);
  if (s == "true" || s == "yes" || s == "on" || s == "1" || s == "t" || s == "y") {
    *out = true;
    return true;
  }
  if (s == "false" || s == "no" || s == "off" || s == "0" || s == "f" || s == "n") {
    *out = false;
    return true;
  }
  return false;
}

bool ParseDouble(const std::string& text, double* out) {
  // YAML's own spellings of infinity (`request_rate: .inf`, R-INST); "inf"
  // and "infinity" are read by SimpleAtod. Each field's spec says whether
  // an infinite value is allowed.
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == ".inf" || lower == "+.inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (lower == "-.inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  return absl::SimpleAtod(text, out);
}

// Sets one scalar (or adds one item to a repeated scalar) from its text.
// Returns "" or what the value must be ("must be a number").
std::string SetScalar(Message* holder, const FieldDescriptor* f, const std::string& text) {
  const Reflection* r = holder->GetReflection();
  const bool add = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double v;
      if (!ParseDouble(text, &v)) return "must be " + ScalarWords(f);
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
        add ? r->AddFloat(holder, f, static_cast<float>(v))
            : r->SetFloat(holder, f, static_cast<float>(v));
      } else {
        add ? r->AddDouble(holder, f, v) : r->SetDouble(holder, f, v);
      }
      return "";
    }
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (text.empty() || text[0] == '-' || text[0] == '+' || !absl::SimpleAtoi(text, &v)) {
        return "must be " + ScalarWords(f);
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
        // Far beyond any bound, still above each one (so it is refused).
        const auto v32 = static_cast<uint32_t>(std::min<uint64_t>(v, 1u << 30));
        add ? r->AddUInt32(holder, f, v32) : r->SetUInt32(holder, f, v32);
      } else {
        add ? r->AddUInt64(holder, f, v) : r->SetUInt64(holder, f, v);
      }
      return "";
    }
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!absl::SimpleAtoi(text, &v)) return "must be " + ScalarWords(f);
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
        const auto v32 = static_cast<int32_t>(std::clamp<int64_t>(v, -(1 << 30), 1 << 30));
        add ? r->AddInt32(holder, f, v32) : r->SetInt32(holder, f, v32);
      } else {
        add ? r->AddInt64(holder, f, v) : r->SetInt64(holder, f, v);
      }
      return "";
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      if (!ParseBool(text, &v)) return "must be " + ScalarWords(f);
      add ? r->AddBool(holder, f, v) : r->SetBool(holder, f, v);
      return "";
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      const google::protobuf::EnumValueDescriptor* value = EnumValueSpelled(f->enum_type(), text);
      if (value == nullptr && add) return "must be " + MustWords(f, SpecOf(f));
      if (value == nullptr) {
        // Reported by CheckValue, with the text kept here.
        r->SetEnumValue(holder, f, kUnknownEnumValue);
        r->MutableUnknownFields(holder)->AddLengthDelimited(f->number(), text);
        return "";
      }
      add ? r->AddEnum(holder, f, value) : r->SetEnum(holder, f, value);
      return "";
    }
    case FieldDescriptor::CPPTYPE_STRING:
      add ? r->AddString(holder, f, text) : r->SetString(holder, f, text);
      return "";
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "must be a mapping";
}

// A YAML value as JSON (for a json_text string given as a mapping): plain
// scalars by the YAML core schema (null, true/false, integers, floats),
// quoted scalars as strings.
nlohmann::json YamlToJson(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& item : node) object[item.first.as<std::string>()] = YamlToJson(item.second);
    return object;
  }
  if (node.IsSequence()) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& item : node) array.push_back(YamlToJson(item));
    return array;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted
  const std::string lower = absl::AsciiStrToLower(s);
  if (lower == "null" || s == "~" || s.empty()) return nullptr;
  if (lower == "true") return true;
  if (lower == "false") return false;
  int64_t i;
  if (absl::SimpleAtoi(s, &i)) return i;
  double d;
  if (s.find_first_not_of("0123456789+-.eE") == std::string::npos && absl::SimpleAtod(s, &d)) {
    return d;
  }
  return s;
}

std::string WithFlag(const std::string& line, const std::string& flag_text) {
  return flag_text.empty() ? line : absl::StrCat(line, " (flag ", flag_text, ")");
}

// What a spec allows, in words, when it gives no `must` of its own.
std::string MustWords(const FieldDescriptor* f, const OptionSpec& s) {
  if (!s.must().empty()) return s.must();
  if (IsNumber(f)) {
    const bool floating = IsFloating(f);
    const std::string inf = s.allow_inf() ? ", or inf" : "";
    if (s.has_min() && s.has_max()) {
      if (!floating) return absl::StrCat(s.min(), "..", s.max());
      return absl::StrCat("a number in ", s.min_exclusive() ? "(" : "[", NumberText(s.min()), ", ",
                          NumberText(s.max()), s.max_exclusive() ? ")" : "]", inf);
    }
    const std::string number = floating ? (s.allow_inf() ? "a number " : "a finite number ") : "";
    if (s.has_min()) {
      return absl::StrCat(number, s.min_exclusive() ? "> " : ">= ", NumberText(s.min()), inf);
    }
    if (s.has_max()) {
      return absl::StrCat(number, s.max_exclusive() ? "< " : "<= ", NumberText(s.max()), inf);
    }
    return TypeWords(f);
  }
  std::vector<std::string> allowed(s.allowed().begin(), s.allowed().end());
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
    for (int i = 0; i < f->enum_type()->value_count(); ++i) {
      allowed.push_back(EnumSpelling(f->enum_type()->value(i)));
    }
  }
  if (!allowed.empty()) {
    std::vector<std::string> shown;
    for (const std::string& a : allowed) {
      if (a.empty()) continue;
      shown.push_back(absl::StrCat("\"", a, "\"", a == s.default_value() ? " (default)" : ""));
    }
    if (shown.size() == 1) return shown[0];
    const std::string last = shown.back();
    shown.pop_back();
    return absl::StrCat(absl::StrJoin(shown, ", "), " or ", last);
  }
  if (s.is_file()) return "a readable file";
  // (An enum's words come from its spellings above.)
  if (s.non_empty()) return "a non-empty text";
  return TypeWords(f);
}

// Checks one scalar value (the field's own, or one item of a list).
void CheckValue(const FieldDescriptor* f, const OptionSpec& s, const Message& holder, int index,
                const std::string& path, const std::string& flag_text, ErrorLines* errors) {
  const Reflection* r = holder.GetReflection();
  const bool item = index >= 0;
  auto complain = [&](const std::string& shown, const std::string& must) {
    errors->push_back(
        WithFlag(absl::StrCat("  ", path, " = ", shown, ": must be ", must), flag_text));
  };
  if (IsNumber(f)) {
    if (!s.has_min() && !s.has_max()) return;
    double v = 0;
    std::string shown;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        v = item ? r->GetRepeatedDouble(holder, f, index) : r->GetDouble(holder, f);
        shown = NumberText(v);
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        v = item ? r->GetRepeatedFloat(holder, f, index) : r->GetFloat(holder, f);
        shown = NumberText(v);
        break;
      case FieldDescriptor::CPPTYPE_UINT32: {
        const uint32_t u = item ? r->GetRepeatedUInt32(holder, f, index) : r->GetUInt32(holder, f);
        v = u;
        shown = absl::StrCat(u);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        const uint64_t u = item ? r->GetRepeatedUInt64(holder, f, index) : r->GetUInt64(holder, f);
        v = static_cast<double>(u);
        shown = absl::StrCat(u);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT32: {
        const int32_t n = item ? r->GetRepeatedInt32(holder, f, index) : r->GetInt32(holder, f);
        v = n;
        shown = absl::StrCat(n);
        break;
      }
      default: {
        const int64_t n = item ? r->GetRepeatedInt64(holder, f, index) : r->GetInt64(holder, f);
        v = static_cast<double>(n);
        shown = absl::StrCat(n);
        break;
      }
    }
    bool ok = !std::isnan(v);
    if (ok && std::isinf(v)) {
      ok = v > 0 && s.allow_inf();
    } else if (ok) {
      if (s.has_min()) ok = s.min_exclusive() ? v > s.min() : v >= s.min();
      if (ok && s.has_max()) ok = s.max_exclusive() ? v < s.max() : v <= s.max();
    }
    if (!ok) complain(shown, MustWords(f, s));
    return;
  }
  // An enum whose text was none of its spellings (SetScalar), in the words
  // of a text with allowed values.
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM && !item &&
      f->enum_type()->FindValueByNumber(r->GetEnumValue(holder, f)) == nullptr) {
    complain(Quoted(UnknownEnumText(holder, f)), MustWords(f, s));
    return;
  }
  if (f->cpp_type() != FieldDescriptor::CPPTYPE_STRING) return;
  const std::string v = item ? r->GetRepeatedString(holder, f, index) : r->GetString(holder, f);
  // Texts travel in proto messages (and into run_config.json), whose
  // strings must be valid UTF-8.
  if (!IsValidUtf8(v)) {
    complain(Quoted(v), "valid UTF-8 text (shown with U+FFFD for the bad bytes)");
    return;
  }
  if (s.allowed_size() > 0 &&
      std::find(s.allowed().begin(), s.allowed().end(), v) == s.allowed().end()) {
    complain(Quoted(v), MustWords(f, s));
  } else if (s.non_empty() && v.empty()) {
    complain("\"\"", MustWords(f, s));
  } else if (s.is_file() && !v.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(v, ec)) complain(Quoted(v), MustWords(f, s));
  }
}

nlohmann::ordered_json ScalarJson(const Message& holder, const FieldDescriptor* f, int index) {
  const Reflection* r = holder.GetReflection();
  const bool item = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const double v =
          f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE
              ? (item ? r->GetRepeatedDouble(holder, f, index) : r->GetDouble(holder, f))
              : (item ? r->GetRepeatedFloat(holder, f, index) : r->GetFloat(holder, f));
      // JSON has no infinity: vLLM's "inf", which the reader takes back.
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return v;
    }
    case FieldDescriptor::CPPTYPE_UINT32:
      return item ? r->GetRepeatedUInt32(holder, f, index) : r->GetUInt32(holder, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return item ? r->GetRepeatedUInt64(holder, f, index) : r->GetUInt64(holder, f);
    case FieldDescriptor::CPPTYPE_INT32:
      return item ? r->GetRepeatedInt32(holder, f, index) : r->GetInt32(holder, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return item ? r->GetRepeatedInt64(holder, f, index) : r->GetInt64(holder, f);
    case FieldDescriptor::CPPTYPE_BOOL:
      return item ? r->GetRepeatedBool(holder, f, index) : r->GetBool(holder, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return EnumSpelling(item ? r->GetRepeatedEnum(holder, f, index) : r->GetEnum(holder, f));
    case FieldDescriptor::CPPTYPE_STRING:
      return item ? r->GetRepeatedString(holder, f, index) : r->GetString(holder, f);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return nullptr;
}

// One value as a flag gives it back to SetScalar: doubles with 17
// significant digits (exact), the rest as YAML reads them.
std::string FlagValueText(const Message& holder, const FieldDescriptor* f, int index) {
  const nlohmann::ordered_json value = ScalarJson(holder, f, index);
  if (value.is_number_float()) return absl::StrFormat("%.17g", value.get<double>());
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string ShowYaml(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsScalar()) return absl::StrCat("\"", node.Scalar(), "\"");
  if (node.IsSequence()) return "a list";
  return "a mapping";
}

std::string TypeWords(const FieldDescriptor* f) {
  if (f->is_repeated()) {
    if (IsMessage(f)) return "a list of mappings";
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        return "a list of strings";
      case FieldDescriptor::CPPTYPE_BOOL:
        return "a list of true/false";
      default:
        return "a list of numbers";
    }
  }
  return ScalarWords(f);
}

std::string ScalarWords(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return "a number";
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return "a whole number >= 0";
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
      return "a whole number";
    case FieldDescriptor::CPPTYPE_BOOL:
      return "true or false";
    case FieldDescriptor::CPPTYPE_STRING:
      return "a string";
    case FieldDescriptor::CPPTYPE_ENUM:
      // Written as one of its spellings (MustWords lists them).
      return "a string";
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "a mapping";
}

const OptionSpec& SpecOf(const FieldDescriptor* field) {
  return field->options().GetExtension(surge::v1::opt);
}

}  // namespace surge::coordinator
