#include "common/stored_enums.h"

#include <algorithm>
#include <string>
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

// Where a closed set's value was stored before its enum field held it:
// the old field's number, and the enum field that holds it now (whose type
// names the values). The old field held the value's name as text (with
// '-' where the name has '_'), or, with `number_from` > 0, a number counted
// from 0 (the enum's value less `number_from`).
struct OldEnumField {
  const char* message;
  int old_number;
  const char* field;
  int number_from = 0;
};
constexpr OldEnumField kOldEnums[] = {
    {"hpt.RecordedDevice", 2, "kind"},
    {"hpt.CostReport", 1, "device_kind"},
    {"hpt.DeviceCost", 1, "kind"},
    {"hpt.PlacementSpec", 2, "head_device"},
    {"hpt.MeasuredBaseline", 1, "baseline"},
    {"hpt.CostComparison", 24, "baseline"},
    {"hpt.HptStatus", 1, "phase"},
    {"hpt.CheckpointHeader", 6, "phase"},
    {"hpt.CheckpointInfo", 3, "phase"},
    {"hpt.PhaseDispatch", 1, "phase"},
    {"hpt.PhaseControllerState", 1, "phase", 1},  // 0 full, 1 trial, 2 lora
    {"hpt.StepShape", 1, "phase"},                // "lora-gpu" for lora_gpu
    {"hpt.RecordedPhase", 1, "phase"},
    {"hpt.PhaseCost", 1, "phase"},
};

// The value an old field holds, or null where it names none.
const EnumValueDescriptor* OldValue(const OldEnumField& old, const FieldDescriptor* field,
                                    const UnknownField& u) {
  if (old.number_from == 0) {
    if (u.type() != UnknownField::TYPE_LENGTH_DELIMITED) return nullptr;
    std::string name = u.length_delimited();
    std::replace(name.begin(), name.end(), '-', '_');
    return field->enum_type()->FindValueByName(name);
  }
  if (u.type() != UnknownField::TYPE_VARINT) return nullptr;
  return field->enum_type()->FindValueByNumber(int(u.varint()) + old.number_from);
}

void MoveOldEnum(const OldEnumField& old, Message* message) {
  const Reflection* reflection = message->GetReflection();
  const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(old.field);
  const UnknownFieldSet& unknown = reflection->GetUnknownFields(*message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const UnknownField& u = unknown.field(i);
    if (u.number() != old.old_number) continue;
    const EnumValueDescriptor* value = OldValue(old, field, u);
    if (value != nullptr && reflection->GetEnumValue(*message, field) == 0) {
      reflection->SetEnumValue(message, field, value->number());
    }
  }
  reflection->MutableUnknownFields(message)->DeleteByNumber(old.old_number);
}

}  // namespace

void UpgradeStoredEnums(Message* message) {
  const Descriptor* type = message->GetDescriptor();
  const Reflection* reflection = message->GetReflection();
  for (const OldEnumField& old : kOldEnums) {
    if (type->full_name() == old.message) MoveOldEnum(old, message);
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
