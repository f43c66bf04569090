#include "coordinator/config/option_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <mutex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/utf8.h"

namespace surge::coordinator {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using surge::v1::OptionSpec;

// A wrong spec is a programming error: stop at once, naming it.
[[noreturn]] void BadSpec(const FieldDescriptor* field, const std::string& what) {
  std::cerr << "surge: internal error: option spec of " << field->full_name() << ": " << what
            << "\n";
  std::abort();
}

std::string Dashed(std::string s) {
  for (char& c : s) c = c == '_' ? '-' : c;
  return s;
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

// The entries of `message`'s fields, flattened sub-messages lifted in.
// `at_root`: `message` is the table's root (root_only fields belong to it).
void AddEntries(const Descriptor* message, const std::string& key_prefix,
                std::vector<const FieldDescriptor*> through, bool at_root, OptionSection* section);

std::unique_ptr<OptionSection> MakeSection(const Descriptor* message) {
  auto section = std::make_unique<OptionSection>();
  section->message = message;
  AddEntries(message, "", {}, /*at_root=*/false, section.get());
  return section;
}

void AddEntries(const Descriptor* message, const std::string& key_prefix,
                std::vector<const FieldDescriptor*> through, bool at_root, OptionSection* section) {
  for (int i = 0; i < message->field_count(); ++i) {
    const FieldDescriptor* f = message->field(i);
    const OptionSpec& spec = SpecOf(f);
    if (spec.root_only() && !at_root) continue;
    std::vector<const FieldDescriptor*> fields = through;
    fields.push_back(f);
    if (spec.flatten()) {
      if (!IsMessage(f) || f->is_repeated()) BadSpec(f, "flatten needs a (single) message field");
      AddEntries(f->message_type(), key_prefix + spec.key_prefix(), fields, /*at_root=*/false,
                 section);
      continue;
    }
    if ((spec.has_min() || spec.has_max()) && !IsNumber(f)) BadSpec(f, "min/max on a non-number");
    if ((spec.allowed_size() > 0 || spec.non_empty() || spec.is_file() || spec.json_text()) &&
        f->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
      BadSpec(f, "a string rule on a non-string field");
    }
    OptionEntry entry;
    entry.key = key_prefix + (spec.key().empty() ? f->name() : spec.key());
    entry.fields = std::move(fields);
    entry.field = f;
    entry.spec = &spec;
    if (IsMessage(f)) entry.sub = MakeSection(f->message_type());
    if (section->Find(entry.key) != nullptr) BadSpec(f, "key " + entry.key + " is used twice");
    section->entries.push_back(std::move(entry));
  }
}

// The message that holds entry.field inside `message` (creating the
// flattened sub-messages on the way).
Message* MutableHolder(Message* message, const std::vector<const FieldDescriptor*>& fields) {
  for (size_t i = 0; i + 1 < fields.size(); ++i) {
    message = message->GetReflection()->MutableMessage(message, fields[i]);
  }
  return message;
}

const Message& Holder(const Message& message, const std::vector<const FieldDescriptor*>& fields) {
  const Message* m = &message;
  for (size_t i = 0; i + 1 < fields.size(); ++i) {
    m = &m->GetReflection()->GetMessage(*m, fields[i]);
  }
  return *m;
}

// An enum value as YAML writes it: lower case, without the enum's own name
// before it (Shape.SHAPE_FLAT is "flat").
std::string EnumWord(const google::protobuf::EnumValueDescriptor* value) {
  std::string prefix;
  for (char c : value->type()->name()) {
    if (absl::ascii_isupper(c) && !prefix.empty()) prefix += '_';
    prefix += absl::ascii_toupper(c);
  }
  prefix += '_';
  const std::string& name = value->name();
  return absl::AsciiStrToLower(absl::StartsWith(name, prefix) ? name.substr(prefix.size()) : name);
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
      std::string word = absl::AsciiStrToLower(text);
      for (char& c : word) c = c == '-' ? '_' : c;
      const google::protobuf::EnumValueDescriptor* value = nullptr;
      for (int i = 0; i < f->enum_type()->value_count() && value == nullptr; ++i) {
        if (EnumWord(f->enum_type()->value(i)) == word) value = f->enum_type()->value(i);
      }
      if (value == nullptr) return "must be " + ScalarWords(f);
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

std::string FlagText(const OptionEntry& entry, const std::string& flag_name) {
  if (!entry.spec->flag_text().empty()) return entry.spec->flag_text();
  return flag_name.empty() ? std::string() : "--" + flag_name;
}

std::string WithFlag(const std::string& line, const std::string& flag_text) {
  return flag_text.empty() ? line : absl::StrCat(line, " (flag ", flag_text, ")");
}

// What a spec allows, in words, when it gives no `must` of its own.
std::string MustWords(const OptionEntry& e) {
  const OptionSpec& s = *e.spec;
  if (!s.must().empty()) return s.must();
  const FieldDescriptor* f = e.field;
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
  if (s.allowed_size() > 0) {
    std::vector<std::string> shown;
    for (const std::string& a : s.allowed()) {
      if (a.empty()) continue;
      shown.push_back(absl::StrCat("\"", a, "\"", a == s.default_value() ? " (default)" : ""));
    }
    if (shown.size() == 1) return shown[0];
    const std::string last = shown.back();
    shown.pop_back();
    return absl::StrCat(absl::StrJoin(shown, ", "), " or ", last);
  }
  if (s.is_file()) return "a readable file";
  if (s.non_empty()) return "a non-empty text";
  return TypeWords(f);
}

// Checks one scalar value (the field's own, or one item of a list).
void CheckValue(const OptionEntry& e, const Message& holder, int index, const std::string& path,
                const std::string& flag_text, ErrorLines* errors) {
  const FieldDescriptor* f = e.field;
  const OptionSpec& s = *e.spec;
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
    if (!ok) complain(shown, MustWords(e));
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
    complain(Quoted(v), MustWords(e));
  } else if (s.non_empty() && v.empty()) {
    complain("\"\"", MustWords(e));
  } else if (s.is_file() && !v.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(v, ec)) complain(Quoted(v), MustWords(e));
  }
}

void CheckSection(const OptionSection& section, const Message& message, const std::string& prefix,
                  const std::map<const OptionEntry*, std::string>& flag_texts, ErrorLines* errors) {
  for (const OptionEntry& e : section.entries) {
    const Message& holder = Holder(message, e.fields);
    const Reflection* r = holder.GetReflection();
    const std::string path = prefix + e.key;
    auto it = flag_texts.find(&e);
    const std::string flag_text = it != flag_texts.end() ? it->second : e.spec->flag_text();
    if (e.sub != nullptr) {
      if (e.field->is_repeated()) {
        for (int i = 0; i < r->FieldSize(holder, e.field); ++i) {
          CheckSection(*e.sub, r->GetRepeatedMessage(holder, e.field, i),
                       absl::StrCat(path, "[", i, "]."), flag_texts, errors);
        }
      } else if (r->HasField(holder, e.field)) {
        CheckSection(*e.sub, r->GetMessage(holder, e.field), path + ".", flag_texts, errors);
      }
      continue;
    }
    if (e.field->is_repeated()) {
      for (int i = 0; i < r->FieldSize(holder, e.field); ++i) {
        CheckValue(e, holder, i, absl::StrCat(path, "[", i, "]"), flag_text, errors);
      }
    } else if (!e.field->has_presence() || r->HasField(holder, e.field)) {
      CheckValue(e, holder, -1, path, flag_text, errors);
    }
  }
}

void SetSectionDefaults(const OptionSection& section, Message* message) {
  for (const OptionEntry& e : section.entries) {
    if (e.sub != nullptr) {
      if (!e.field->is_repeated()) {
        // Only sub-messages that have defaults are created.
        Message* holder = MutableHolder(message, e.fields);
        const Reflection* r = holder->GetReflection();
        std::unique_ptr<Message> scratch(r->GetMessage(*holder, e.field).New());
        SetSectionDefaults(*e.sub, scratch.get());
        if (scratch->ByteSizeLong() > 0) r->MutableMessage(holder, e.field)->MergeFrom(*scratch);
      }
      continue;
    }
    if (e.spec->default_value().empty()) continue;
    if (e.field->is_repeated()) BadSpec(e.field, "default_value on a list");
    const std::string problem =
        SetScalar(MutableHolder(message, e.fields), e.field, e.spec->default_value());
    if (!problem.empty()) BadSpec(e.field, "default_value " + problem);
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
      return EnumWord(item ? r->GetRepeatedEnum(holder, f, index) : r->GetEnum(holder, f));
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

nlohmann::ordered_json SaveSection(const OptionSection& section, const Message& message) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const OptionEntry& e : section.entries) {
    const OptionSpec& s = *e.spec;
    if (s.save() == OptionSpec::SAVE_NEVER) continue;
    const Message& holder = Holder(message, e.fields);
    const Reflection* r = holder.GetReflection();
    if (e.field->is_repeated()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (int i = 0; i < r->FieldSize(holder, e.field); ++i) {
        list.push_back(e.sub != nullptr
                           ? SaveSection(*e.sub, r->GetRepeatedMessage(holder, e.field, i))
                           : ScalarJson(holder, e.field, i));
      }
      if (!list.empty()) j[e.key] = std::move(list);
      continue;
    }
    if (e.field->has_presence() && !r->HasField(holder, e.field)) continue;
    if (e.sub != nullptr) {
      nlohmann::ordered_json sub = SaveSection(*e.sub, r->GetMessage(holder, e.field));
      if (!sub.empty()) j[e.key] = std::move(sub);
      continue;
    }
    nlohmann::ordered_json value = ScalarJson(holder, e.field, -1);
    if (s.save() == OptionSpec::SAVE_IF_NOT_DEFAULT) {
      // The default, as the field would hold it after SetDefaults.
      auto scratch = std::unique_ptr<Message>(holder.New());
      if (!s.default_value().empty()) (void)SetScalar(scratch.get(), e.field, s.default_value());
      if (value == ScalarJson(*scratch, e.field, -1)) continue;
      if (value.is_string() && value.get<std::string>().empty()) continue;
    }
    j[e.key] = std::move(value);
  }
  return j;
}

void ReadSection(const OptionSection& section, const YAML::Node& mapping, const std::string& prefix,
                 const UnknownKeyText& unknown, Message* message, ErrorLines* errors);

// Reads `node` into the entry's field of `message`.
void ReadEntry(const OptionEntry& e, const YAML::Node& node, const std::string& path,
               const UnknownKeyText& unknown, Message* message, ErrorLines* errors) {
  auto complain = [&](const YAML::Node& n, const std::string& p, const std::string& must) {
    errors->push_back(absl::StrCat("  ", p, " = ", ShowYaml(n), ": ", must));
  };
  Message* holder = MutableHolder(message, e.fields);
  const Reflection* r = holder->GetReflection();
  const FieldDescriptor* f = e.field;
  if (f->is_repeated()) {
    if (node.IsNull()) return;
    if (!node.IsSequence()) {
      complain(node, path,
               absl::StrCat("must be ", e.spec->must().empty() ? TypeWords(f) : e.spec->must()));
      return;
    }
    r->ClearField(holder, f);
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string item_path = absl::StrCat(path, "[", i, "]");
      if (e.sub != nullptr) {
        if (!node[i].IsMap()) {
          complain(node[i], item_path, absl::StrCat("must be a mapping of ", e.sub->KeyList()));
          continue;
        }
        ReadSection(*e.sub, node[i], item_path + ".", unknown, r->AddMessage(holder, f), errors);
      } else if (!node[i].IsScalar()) {
        complain(node[i], item_path, absl::StrCat("must be ", ScalarWords(f)));
      } else if (std::string problem = SetScalar(holder, f, node[i].Scalar()); !problem.empty()) {
        complain(node[i], item_path, problem);
      }
    }
    return;
  }
  if (e.sub != nullptr) {
    if (node.IsNull()) return;
    if (!node.IsMap()) {
      complain(node, path, absl::StrCat("must be a mapping of ", e.sub->KeyList()));
      return;
    }
    ReadSection(*e.sub, node, path + ".", unknown, r->MutableMessage(holder, f), errors);
    return;
  }
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
    if (node.IsNull()) {  // "key:" with no value reads as empty
      r->SetString(holder, f, "");
      return;
    }
    if (e.spec->json_text() && node.IsMap()) {
      r->SetString(holder, f, YamlToJson(node).dump());
      return;
    }
  }
  if (!node.IsScalar()) {
    complain(node, path, "must be " + TypeWords(f));
    return;
  }
  if (std::string problem = SetScalar(holder, f, node.Scalar()); !problem.empty()) {
    complain(node, path, problem);
  }
}

void ReadSection(const OptionSection& section, const YAML::Node& mapping, const std::string& prefix,
                 const UnknownKeyText& unknown, Message* message, ErrorLines* errors) {
  for (const auto& item : mapping) {
    const std::string key = item.first.as<std::string>();
    const std::string path = prefix + key;
    const OptionEntry* e = section.Find(key);
    if (e == nullptr) {
      std::string section_path = prefix;
      if (!section_path.empty()) section_path.pop_back();  // the '.'
      errors->push_back(
          absl::StrCat("  ", path, " = ", ShowYaml(item.second), ": ", unknown(section_path, key)));
      continue;
    }
    ReadEntry(*e, item.second, path, unknown, message, errors);
  }
}

void AddFlags(const OptionSection& section, const std::string& field_prefix,
              std::vector<const FieldDescriptor*> path, const std::string& help_prefix,
              std::vector<OptionFlag>* flags) {
  for (const OptionEntry& e : section.entries) {
    std::vector<const FieldDescriptor*> entry_path = path;
    entry_path.insert(entry_path.end(), e.fields.begin(), e.fields.end());
    // The help prefix of a flattened sub-message this entry lies in.
    std::string help = help_prefix;
    for (const FieldDescriptor* f : e.fields) help += SpecOf(f).help_prefix();
    if (e.sub != nullptr) {
      if (!e.field->is_repeated()) {
        AddFlags(*e.sub, field_prefix + e.key + ".", entry_path, help, flags);
      }
      continue;  // lists of mappings: YAML only
    }
    const OptionSpec& s = *e.spec;
    if (s.flag() == "-") continue;
    OptionFlag flag;
    flag.name = s.flag().empty() ? Dashed(e.key) : s.flag();
    flag.field = field_prefix + e.key;
    flag.entry = &e;
    flag.path = std::move(entry_path);
    std::string text = s.help();
    if (text.empty()) BadSpec(e.field, "a flag needs help text");
    // "Built-in server: " + "Time to first token" reads "...: time to ...".
    if (!help.empty()) text[0] = absl::ascii_tolower(text[0]);
    flag.help = help + text;
    for (const OptionFlag& other : *flags) {
      if (other.name == flag.name) BadSpec(e.field, "flag --" + flag.name + " is used twice");
    }
    flags->push_back(std::move(flag));
  }
}

}  // namespace

const OptionSpec& SpecOf(const FieldDescriptor* field) {
  return field->options().GetExtension(surge::v1::opt);
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
    case FieldDescriptor::CPPTYPE_ENUM: {
      std::vector<std::string> names;
      for (int i = 0; i < f->enum_type()->value_count(); ++i) {
        names.push_back(EnumWord(f->enum_type()->value(i)));
      }
      return "one of " + absl::StrJoin(names, ", ");
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "a mapping";
}

const OptionEntry* OptionSection::Find(std::string_view key) const {
  for (const OptionEntry& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

std::vector<std::string> OptionSection::KeyNames() const {
  std::vector<std::string> names;
  for (const OptionEntry& e : entries) {
    if (e.sub == nullptr) names.push_back(e.key);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string OptionSection::KeyList() const {
  std::vector<std::string> parts = KeyNames();
  for (const OptionEntry& e : entries) {
    if (e.sub == nullptr) continue;
    parts.push_back(absl::StrCat(e.key, ": ", e.field->is_repeated() ? "[{" : "{", e.sub->KeyList(),
                                 e.field->is_repeated() ? "}]" : "}"));
  }
  return absl::StrJoin(parts, ", ");
}

OptionTable::OptionTable(const Descriptor* root) {
  root_.message = root;
  AddEntries(root, "", {}, /*at_root=*/true, &root_);
  AddFlags(root_, "", {}, "", &flags_);
}

const OptionTable& OptionTable::For(const Descriptor* root) {
  static std::mutex mu;
  static auto* tables = new std::map<const Descriptor*, std::unique_ptr<OptionTable>>;
  std::lock_guard<std::mutex> lock(mu);
  auto& table = (*tables)[root];
  if (table == nullptr) table.reset(new OptionTable(root));
  return *table;
}

const OptionFlag* OptionTable::FindFlag(std::string_view name) const {
  for (const OptionFlag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void OptionTable::SetDefaults(Message* message) const { SetSectionDefaults(root_, message); }

void OptionTable::ReadYaml(const YAML::Node& mapping, const UnknownKeyText& unknown,
                           Message* message, ErrorLines* errors) const {
  ReadSection(root_, mapping, "", unknown, message, errors);
}

std::string OptionTable::SetFlag(const OptionFlag& flag, const std::string& text,
                                 Message* message) const {
  Message* holder = message;
  for (size_t i = 0; i + 1 < flag.path.size(); ++i) {
    holder = holder->GetReflection()->MutableMessage(holder, flag.path[i]);
  }
  const std::string problem = SetScalar(holder, flag.entry->field, text);
  if (problem.empty()) return "";
  return absl::StrCat("  ", flag.field, " = \"", text, "\": ", problem, " (flag --", flag.name,
                      ")");
}

void OptionTable::Check(const Message& message, ErrorLines* errors) const {
  std::map<const OptionEntry*, std::string> flag_texts;
  for (const OptionFlag& f : flags_) flag_texts[f.entry] = FlagText(*f.entry, f.name);
  CheckSection(root_, message, "", flag_texts, errors);
}

nlohmann::ordered_json OptionTable::Save(const Message& message) const {
  return SaveSection(root_, message);
}

std::vector<std::string> OptionTable::FlagArgs(const Message& message) const {
  std::vector<std::string> args;
  for (const OptionFlag& flag : flags_) {
    const FieldDescriptor* f = flag.entry->field;
    const Message& holder = Holder(message, flag.path);
    const Reflection* r = holder.GetReflection();
    if (f->is_repeated()) {
      for (int i = 0; i < r->FieldSize(holder, f); ++i) {
        args.insert(args.end(), {"--" + flag.name, FlagValueText(holder, f, i)});
      }
      continue;
    }
    if (f->has_presence() && !r->HasField(holder, f)) continue;
    const std::string text = FlagValueText(holder, f, -1);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
      args.push_back(absl::StrCat("--", flag.name, "=", text));
    } else if (!text.empty() || !flag.entry->spec->default_value().empty() ||
               f->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
      args.insert(args.end(), {"--" + flag.name, text});
    }
  }
  return args;
}

}  // namespace surge::coordinator
