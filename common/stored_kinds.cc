#include "common/stored_kinds.h"

#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/unknown_field_set.h"
#include "proto/work.pb.h"

namespace hpt {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Where a kind was text, and the enum field that holds it now.
struct TextKindField {
  const char* message;
  int text_number;
  const char* field;
};
constexpr TextKindField kTextKinds[] = {
    {"hpt.RecordedDevice", 2, "kind"},
    {"hpt.CostReport", 1, "device_kind"},
    {"hpt.DeviceCost", 1, "kind"},
    {"hpt.PlacementSpec", 2, "head_device"},
};

void MoveTextKind(const TextKindField& text, Message* message) {
  const Reflection* reflection = message->GetReflection();
  const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(text.field);
  const UnknownFieldSet& unknown = reflection->GetUnknownFields(*message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const UnknownField& u = unknown.field(i);
    if (u.number() != text.text_number || u.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    const EnumValueDescriptor* value =
        DeviceKind::Name_descriptor()->FindValueByName(u.length_delimited());
    if (value != nullptr && reflection->GetEnumValue(*message, field) == 0) {
      reflection->SetEnumValue(message, field, value->number());
    }
  }
  reflection->MutableUnknownFields(message)->DeleteByNumber(text.text_number);
}

}  // namespace

void UpgradeStoredKinds(Message* message) {
  const Descriptor* type = message->GetDescriptor();
  const Reflection* reflection = message->GetReflection();
  for (const TextKindField& text : kTextKinds) {
    if (type->full_name() == text.message) MoveTextKind(text, message);
  }
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || f->is_map()) continue;
    if (!f->is_repeated()) {
      UpgradeStoredKinds(reflection->MutableMessage(message, f));
      continue;
    }
    for (int i = 0; i < reflection->FieldSize(*message, f); ++i) {
      UpgradeStoredKinds(reflection->MutableRepeatedMessage(message, f, i));
    }
  }
}

}  // namespace hpt
