#include "coordinator/results/run_facts_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace surge::coordinator {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// One printed scalar as the block writes it (see the header).
nlohmann::json Shaped(const FieldDescriptor& field, const nlohmann::json& value) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v = 0;
      if (value.is_string() && absl::SimpleAtoi(value.get<std::string>(), &v)) return v;
      return value;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v = 0;
      if (value.is_string() && absl::SimpleAtoi(value.get<std::string>(), &v)) return v;
      return value;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      if (value.is_number()) return value.get<double>();
      if (value == "Infinity") return "inf";
      if (value == "-Infinity") return "-inf";
      return nullptr;  // "NaN"
    default:
      return value;
  }
}

// Shapes every field of `object` (`message` as printed) in place. An unset
// field with presence is taken out (or, with `nulls`, made null when
// marked), whatever the printer's choice for it.
void Shape(const Message& message, bool nulls, nlohmann::json& object) {
  const Descriptor& type = *message.GetDescriptor();
  const Reflection& reflection = *message.GetReflection();
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& field = *type.field(i);
    if (field.has_presence() && !reflection.HasField(message, &field)) {
      object.erase(field.name());
      if (nulls && field.options().GetExtension(surge::v1::null_when_unset)) {
        object[field.name()] = nullptr;
      }
      continue;
    }
    auto it = object.find(field.name());
    if (it == object.end()) continue;
    if (field.is_repeated()) {
      for (int k = 0; k < static_cast<int>(it->size()); ++k) {
        if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          Shape(reflection.GetRepeatedMessage(message, &field, k), nulls, (*it)[k]);
        } else {
          (*it)[k] = Shaped(field, (*it)[k]);
        }
      }
    } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Shape(reflection.GetMessage(message, &field), nulls, *it);
    } else {
      *it = Shaped(field, *it);
    }
  }
}

// The reverse of Shape for the parser: nulls dropped, "inf" as protobuf
// spells it.
void Unshape(const Descriptor& type, nlohmann::json& object) {
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& field = *type.field(i);
    auto it = object.find(field.name());
    if (it == object.end()) continue;
    if (it->is_null()) {
      object.erase(it);
      continue;
    }
    auto unshape_one = [&field](nlohmann::json& v) {
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && v.is_object()) {
        Unshape(*field.message_type(), v);
      } else if (v == "inf") {
        v = "Infinity";
      } else if (v == "-inf") {
        v = "-Infinity";
      }
    };
    if (field.is_repeated() && it->is_array()) {
      for (nlohmann::json& v : *it) unshape_one(v);
    } else if (!field.is_repeated()) {
      unshape_one(*it);
    }
  }
}

}  // namespace

nlohmann::json RunFactsToJson(const surge::v1::RunFacts& facts) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // Facts of a run whose end is unknown: only what is set.
  const bool whole_block = facts.has_stop_reason();
  options.always_print_primitive_fields = whole_block;
  std::string text;
  // Printing a well-formed message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(facts, &text, options);
  nlohmann::json run = nlohmann::json::parse(text);
  Shape(facts, whole_block, run);
  return run;
}

absl::StatusOr<surge::v1::RunFacts> RunFactsFromJson(const nlohmann::json& run) {
  if (!run.is_object()) {
    return absl::InvalidArgumentError("the summary's \"run\" block is not an object");
  }
  nlohmann::json copy = run;
  Unshape(*surge::v1::RunFacts::descriptor(), copy);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  surge::v1::RunFacts facts;
  if (auto s = google::protobuf::util::JsonStringToMessage(copy.dump(), &facts, options); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the summary's \"run\" block: ", std::string(s.message())));
  }
  return facts;
}

}  // namespace surge::coordinator
