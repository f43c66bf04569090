// The configuration's options as one table made from the proto descriptors:
// every field of RunConfig (and of each command's own options message,
// e.g. SimServerConfig) carries an OptionSpec (proto/surge/v1/options.proto),
// and this module turns those specs into the YAML reader, the flags' setters,
// the defaults, the range checks, the saved JSON and the flags that give a
// message to another process. Adding an option = one annotated proto field
// plus its use (docs/DESIGN.md "How to add an option"). Pure but for
// is_file checks.
#ifndef SURGE_COORDINATOR_CONFIG_OPTION_TABLE_H_
#define SURGE_COORDINATOR_CONFIG_OPTION_TABLE_H_

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/config/option_values.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"
#include "surge/v1/options.pb.h"

namespace surge::coordinator {

struct OptionSection;

// One YAML key: a field of the section's message (through flattened
// sub-messages), read, checked and saved as its spec says.
struct OptionEntry {
  // The key as written in YAML at its level ("sim_ttft_ms", "burstiness").
  std::string key;
  // Fields from the section's message to this field (more than one when a
  // flattened sub-message is crossed: RunConfig.sim_server.ttft_ms).
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  const google::protobuf::FieldDescriptor* field = nullptr;  // fields.back()
  const surge::v1::OptionSpec* spec = nullptr;
  // Message fields: the nested mapping (or, repeated, each list item's).
  std::unique_ptr<OptionSection> sub;
};

// One YAML mapping: the keys of a message (with its flattened
// sub-messages' keys lifted in), in field order.
struct OptionSection {
  const google::protobuf::Descriptor* message = nullptr;
  std::vector<OptionEntry> entries;
  const OptionEntry* Find(std::string_view key) const;
  // Keys that are not mappings, sorted; then "<key>: {...}" per mapping
  // (and "<key>: [{...}]" per list of mappings), in field order.
  std::string KeyList() const;
  // The scalar and list keys, sorted (for "did you mean").
  std::vector<std::string> KeyNames() const;
};

// A flag made from an entry outside any list of mappings.
struct OptionFlag {
  std::string name;   // without "--"
  std::string field;  // key path in messages: "traffic_cfg.burstiness", "sim_ttft_ms"
  std::string help;   // help_prefix + help
  const OptionEntry* entry = nullptr;
  // Fields from the root message to the entry's field.
  std::vector<const google::protobuf::FieldDescriptor*> path;
  // `name`, then its spec's flag_alias names.
  std::vector<std::string> Names() const;
};

// Is called for a key no section entry has: `section` is the dotted path
// of the mapping ("" = top level), returns the text after "<field> =
// <value>: " (e.g. "unknown key; did you mean `seed`?").
using UnknownKeyText =
    std::function<std::string(const std::string& section, const std::string& key)>;

class OptionTable {
 public:
  // The table of `root` (RunConfig, or SimServerConfig for `surge
  // sim-server`), built once. Dies on a spec that contradicts its field
  // (a bound on a string, a flag name used twice): a programming error
  // caught by every test that reads a configuration.
  static const OptionTable& For(const google::protobuf::Descriptor* root);

  const OptionSection& root() const { return root_; }
  const std::vector<OptionFlag>& flags() const { return flags_; }
  const OptionFlag* FindFlag(std::string_view name) const;

  // Sets every default_value (recursively; lists of mappings have none).
  void SetDefaults(google::protobuf::Message* message) const;

  // Reads a YAML mapping into `message`, overwriting only the keys given
  // (a list replaces the list). Problems are appended to `errors`.
  void ReadYaml(const YAML::Node& mapping, const UnknownKeyText& unknown,
                google::protobuf::Message* message, ErrorLines* errors) const;

  // Sets the flag's field from its text (a list flag adds one item).
  // Returns "" or the complaint line naming field, value and flag.
  std::string SetFlag(const OptionFlag& flag, const std::string& text,
                      google::protobuf::Message* message) const;

  // The checks every spec declares (bounds, allowed values, non_empty,
  // is_file, valid UTF-8 for every text): one line per problem,
  // "<field> = <value>: must be <must> (flag --<flag>)".
  void Check(const google::protobuf::Message& message, ErrorLines* errors) const;

  // Every field as its spec's save policy says, as YAML reads it back
  // (+inf written "inf"). Cross-field rules (keys without effect) are the
  // caller's.
  nlohmann::ordered_json Save(const google::protobuf::Message& message) const;

  // The flags that make `message` again when read by SetFlag over
  // SetDefaults: "--<flag>", "<value>" per flag in table order (a list: one
  // pair per item; a bool: "--<flag>=true|false" alone), doubles with 17
  // significant digits so that they arrive exactly. Left out: unset
  // optional fields, and empty texts whose default is empty.
  std::vector<std::string> FlagArgs(const google::protobuf::Message& message) const;

 private:
  explicit OptionTable(const google::protobuf::Descriptor* root);
  // How error lines name each entry's flag: "--<flag>" (or its spec's
  // flag_text), then its flag_note.
  std::map<const OptionEntry*, std::string> FlagTexts() const;
  OptionSection root_;
  std::vector<OptionFlag> flags_;
};

// A message of type M with every default of its table set (what a command
// whose options are M uses when no flag is given).
template <typename M>
M WithDefaults() {
  M message;
  OptionTable::For(M::descriptor()).SetDefaults(&message);
  return message;
}

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CONFIG_OPTION_TABLE_H_
