// How the configuration spells an enum value (YAML, flags, run_config.json,
// error texts): the value's (spelling) option (proto/surge/v1/options.proto),
// else the naming rule: the value's name in lower case without the enum's
// own name before it (LatePolicy.LATE_POLICY_SKIP is "skip").
#ifndef SURGE_COMMON_ENUM_SPELLING_H_
#define SURGE_COMMON_ENUM_SPELLING_H_

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "surge/v1/options.pb.h"

namespace surge {

inline std::string EnumSpelling(const google::protobuf::EnumValueDescriptor* value) {
  if (value->options().HasExtension(surge::v1::spelling)) {
    return value->options().GetExtension(surge::v1::spelling);
  }
  std::string prefix;
  for (char c : value->type()->name()) {
    if (absl::ascii_isupper(c) && !prefix.empty()) prefix += '_';
    prefix += absl::ascii_toupper(c);
  }
  prefix += '_';
  const std::string& name = value->name();
  return absl::AsciiStrToLower(absl::StartsWith(name, prefix) ? name.substr(prefix.size()) : name);
}

// The spelling of a generated enum's value ("skip" for LATE_POLICY_SKIP); a
// number that is no value of E is shown as its number.
template <typename E>
std::string EnumSpelling(E value) {
  const google::protobuf::EnumValueDescriptor* v =
      google::protobuf::GetEnumDescriptor<E>()->FindValueByNumber(static_cast<int>(value));
  return v == nullptr ? absl::StrCat(static_cast<int>(value)) : EnumSpelling(v);
}

}  // namespace surge

#endif  // SURGE_COMMON_ENUM_SPELLING_H_
