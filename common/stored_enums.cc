#include "common/stored_enums.h"

#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/unknown_field_set.h"

namespace hpt {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Where a closed set's value was text, and the enum field that holds it
// now (whose type names the values).
struct TextEnumField {
  const char* message;
  int text_number;
  const char* field;
};
constexpr TextEnumField kTextEnums[] = {
    {"hpt.RecordedDevice", 2, "kind"},       {"hpt.CostReport", 1, "device_kind"},
    {"hpt.DeviceCost", 1, "kind"},           {"hpt.PlacementSpec", 2, "head_device"},
    {"hpt.MeasuredBaseline", 1, "baseline"}, {"hpt.CostComparison", 24, "baseline"},
};

void MoveTextEnum(const TextEnumField& text, Message* message) {
  const Reflection* reflection = message->GetReflection();
  const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(text.field);
  const UnknownFieldSet& unknown = reflection->GetUnknownFields(*message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const UnknownField& u = unknown.field(i);
    if (u.number() != text.text_number || u.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    const EnumValueDescriptor* value = field->enum_type()->FindValueByName(u.length_delimited());
    if (value != nullptr && reflection->GetEnumValue(*message, field) == 0) {
      reflection->SetEnumValue(message, field, value->number());
    }
  }
  reflection->MutableUnknownFields(message)->DeleteByNumber(text.text_number);
}

}  // namespace

void UpgradeStoredEnums(Message* message) {
  const Descriptor* type = message->GetDescriptor();
  const Reflection* reflection = message->GetReflection();
  for (const TextEnumField& text : kTextEnums) {
    if (type->full_name() == text.message) MoveTextEnum(text, message);
  }
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || f->is_map()) continue;
    if (!f->is_repeated()) {
      UpgradeStoredEnums(reflection->MutableMessage(message, f));
      continue;
    }
    for (int i = 0; i < reflection->FieldSize(*message, f); ++i) {
      UpgradeStoredEnums(reflection->MutableRepeatedMessage(message, f, i));
    }
  }
}

}  // namespace hpt
