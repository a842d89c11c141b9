#include "hptctl/request_text.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/user_file.h"
#include "google/protobuf/descriptor.h"

namespace hpt {

absl::Status CheckRequestText(const google::protobuf::Message& request) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = request.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(request, &fields);
  for (const FieldDescriptor* field : fields) {
    const int n = field->is_repeated() ? reflection->FieldSize(request, field) : 1;
    for (int i = 0; i < n; ++i) {
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        const std::string text = field->is_repeated()
                                     ? reflection->GetRepeatedString(request, field, i)
                                     : reflection->GetString(request, field);
        const size_t bad = FirstNonTextByte(text);
        if (bad == std::string::npos) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            absl::StripPrefix(field->full_name(), "hpt."),
            field->is_repeated() ? absl::StrCat("[", i, "]") : "", " is not UTF-8 text (at byte ",
            bad + 1, "): give it as UTF-8"));
      }
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const google::protobuf::Message& inner =
            field->is_repeated() ? reflection->GetRepeatedMessage(request, field, i)
                                 : reflection->GetMessage(request, field);
        if (absl::Status s = CheckRequestText(inner); !s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace hpt
