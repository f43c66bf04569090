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
#include "common/enum_spelling.h"
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

// How error lines name the entry's flag, its flag_note after it.
std::string FlagText(const OptionEntry& entry, const std::string& flag_name) {
  if (!entry.spec->flag_text().empty()) return entry.spec->flag_text() + entry.spec->flag_note();
  return flag_name.empty() ? std::string() : "--" + flag_name + entry.spec->flag_note();
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
        CheckValue(e.field, *e.spec, holder, i, absl::StrCat(path, "[", i, "]"), flag_text, errors);
      }
    } else if (!e.field->has_presence() || r->HasField(holder, e.field)) {
      CheckValue(e.field, *e.spec, holder, -1, path, flag_text, errors);
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

// What reading one YAML mapping needs besides the node and the message.
struct ReadContext {
  const UnknownKeyText& unknown;
  // How error lines name each entry's flag (OptionTable::FlagTexts).
  const std::map<const OptionEntry*, std::string>& flag_texts;
  ErrorLines* errors;
};

void ReadSection(const OptionSection& section, const YAML::Node& mapping, const std::string& prefix,
                 const ReadContext& context, Message* message);

// Reads `node` into the entry's field of `message`.
void ReadEntry(const OptionEntry& e, const YAML::Node& node, const std::string& path,
               const ReadContext& context, Message* message) {
  ErrorLines* errors = context.errors;
  auto complain = [&](const YAML::Node& n, const std::string& p, const std::string& must) {
    errors->push_back(absl::StrCat("  ", p, " = ", ShowYaml(n), ": ", must));
  };
  // A text that is no spelling of the enum names the flag too, as the
  // allowed-values check of a text does (CheckValue).
  auto scalar_problem = [&](const YAML::Node& n, const std::string& p, const std::string& must) {
    if (e.field->cpp_type() != FieldDescriptor::CPPTYPE_ENUM) return complain(n, p, must);
    auto it = context.flag_texts.find(&e);
    errors->push_back(WithFlag(absl::StrCat("  ", p, " = ", ShowYaml(n), ": ", must),
                               it != context.flag_texts.end() ? it->second : FlagText(e, "")));
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
        ReadSection(*e.sub, node[i], item_path + ".", context, r->AddMessage(holder, f));
      } else if (!node[i].IsScalar()) {
        complain(node[i], item_path, absl::StrCat("must be ", ScalarWords(f)));
      } else if (std::string problem = SetScalar(holder, f, node[i].Scalar()); !problem.empty()) {
        scalar_problem(node[i], item_path, problem);
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
    ReadSection(*e.sub, node, path + ".", context, r->MutableMessage(holder, f));
    return;
  }
  // "key:" with no value reads as an empty text (an enum: its value spelled
  // "", or its zero value).
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM && node.IsNull()) {
    (void)SetScalar(holder, f, "");
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
    scalar_problem(node, path, problem);
  }
}

void ReadSection(const OptionSection& section, const YAML::Node& mapping, const std::string& prefix,
                 const ReadContext& context, Message* message) {
  for (const auto& item : mapping) {
    const std::string key = item.first.as<std::string>();
    const std::string path = prefix + key;
    const OptionEntry* e = section.Find(key);
    if (e == nullptr) {
      std::string section_path = prefix;
      if (!section_path.empty()) section_path.pop_back();  // the '.'
      context.errors->push_back(absl::StrCat("  ", path, " = ", ShowYaml(item.second), ": ",
                                             context.unknown(section_path, key)));
      continue;
    }
    ReadEntry(*e, item.second, path, context, message);
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
      for (const std::string& name : flag.Names()) {
        for (const std::string& taken : other.Names()) {
          if (name == taken) BadSpec(e.field, "flag --" + name + " is used twice");
        }
      }
    }
    flags->push_back(std::move(flag));
  }
}

}  // namespace

std::vector<std::string> OptionFlag::Names() const {
  std::vector<std::string> names = {name};
  for (const std::string& alias : entry->spec->flag_alias()) names.push_back(alias);
  return names;
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
  ReadSection(root_, mapping, "", ReadContext{unknown, FlagTexts(), errors}, message);
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
                      flag.entry->spec->flag_note(), ")");
}

std::map<const OptionEntry*, std::string> OptionTable::FlagTexts() const {
  std::map<const OptionEntry*, std::string> flag_texts;
  for (const OptionFlag& f : flags_) flag_texts[f.entry] = FlagText(*f.entry, f.name);
  return flag_texts;
}

void OptionTable::Check(const Message& message, ErrorLines* errors) const {
  CheckSection(root_, message, "", FlagTexts(), errors);
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
