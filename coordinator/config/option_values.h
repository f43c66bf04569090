// One value of a configuration field as the option table
// (option_table.h) handles it: read from its text (SetScalar, the YAML and
// flag readers' one setter), written back (ScalarJson, FlagValueText),
// checked against its spec (CheckValue) and described in error words
// (MustWords, TypeWords, ScalarWords, ShowYaml). Enums are read and written
// by their spellings (common/enum_spelling.h). Pure but for is_file checks.
#ifndef SURGE_COORDINATOR_CONFIG_OPTION_VALUES_H_
#define SURGE_COORDINATOR_CONFIG_OPTION_VALUES_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"
#include "surge/v1/options.pb.h"

namespace surge::coordinator {

// Error lines in the configuration's style: "  <field> = <value>: <what
// is allowed>".
using ErrorLines = std::vector<std::string>;

// The spec of a field (the default instance when it has none).
const surge::v1::OptionSpec& SpecOf(const google::protobuf::FieldDescriptor* field);

bool IsNumber(const google::protobuf::FieldDescriptor* f);
bool IsFloating(const google::protobuf::FieldDescriptor* f);
bool IsMessage(const google::protobuf::FieldDescriptor* f);

// The value of `type` spelled `text` (common/enum_spelling.h); an empty
// text is the value spelled "", else the zero value. Null: no such value.
const google::protobuf::EnumValueDescriptor* EnumValueSpelled(
    const google::protobuf::EnumDescriptor* type, const std::string& text);

// "\"text\"" with invalid UTF-8 shown as U+FFFD.
std::string Quoted(const std::string& text);
// A number as error lines show it (absl::StrCat).
std::string NumberText(double v);

// Sets one scalar (or adds one item to a repeated scalar) from its text.
// Returns "" or what the value must be ("must be a number"). An enum's
// text that is none of its spellings is kept (the field holds a number
// that is no value, so it counts as given) and reported by CheckValue, in
// field order; the rules across fields skip such a value.
std::string SetScalar(google::protobuf::Message* holder, const google::protobuf::FieldDescriptor* f,
                      const std::string& text);

// An enum field's value as the configuration wrote it: its spelling, or the
// text given that was none (SetScalar keeps it).
std::string EnumText(const google::protobuf::Message& holder,
                     const google::protobuf::FieldDescriptor* f);

// A YAML value as JSON (for a json_text string given as a mapping): plain
// scalars by the YAML core schema (null, true/false, integers, floats),
// quoted scalars as strings.
nlohmann::json YamlToJson(const YAML::Node& node);

// `line` + " (flag <flag_text>)", or `line` alone for an empty flag_text.
std::string WithFlag(const std::string& line, const std::string& flag_text);

// What a spec allows, in words: its `must`, else made from the bounds, the
// allowed values (an enum's spellings), non_empty and is_file.
std::string MustWords(const google::protobuf::FieldDescriptor* f, const surge::v1::OptionSpec& s);

// Checks one scalar value (the field's own, index -1, or one item of a
// list): "<path> = <value>: must be <must>" + the flag text, appended to
// `errors` when it breaks its spec.
void CheckValue(const google::protobuf::FieldDescriptor* f, const surge::v1::OptionSpec& s,
                const google::protobuf::Message& holder, int index, const std::string& path,
                const std::string& flag_text, ErrorLines* errors);

// One value (index -1: the field's own) as run_config.json holds it (+inf
// written "inf", an enum by its spelling).
nlohmann::ordered_json ScalarJson(const google::protobuf::Message& holder,
                                  const google::protobuf::FieldDescriptor* f, int index);

// One value as a flag gives it back to SetScalar: doubles with 17
// significant digits (exact), the rest as YAML reads them.
std::string FlagValueText(const google::protobuf::Message& holder,
                          const google::protobuf::FieldDescriptor* f, int index);

// The value as error messages show it: "\"text\"", "a list", "a mapping",
// "null" for YAML nodes.
std::string ShowYaml(const YAML::Node& node);

// "Name" of a YAML node: what a field must be, by its type ("a number", "a
// whole number >= 0", "true or false", "a string", ...).
std::string TypeWords(const google::protobuf::FieldDescriptor* field);

// What one value (a list's item too) of the field must be: "a number", ...
// (an enum: "a string", one of its spellings).
std::string ScalarWords(const google::protobuf::FieldDescriptor* field);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_CONFIG_OPTION_VALUES_H_
