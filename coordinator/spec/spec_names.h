// Old field names in text-format job specs, rewritten to today's before a
// spec is parsed (job_spec.h ParseJobSpecText). Fields are renamed in
// place (same field numbers), so binary specs, stored jobs and
// checkpoints read on unchanged; only the text form needs this.
//
//   data { window: N }        -> data { input_steps: N }
//   hpt  { window: K }        -> hpt { check_window_samples: K }
//   hpt  { window_steps: S }  -> hpt { check_window_steps: S }
//
// A name is rewritten only as a field of that message (a `window` inside
// `training`, a string or a comment stays as it is), so a spec may mix old
// and new names. Both the old and the new name of one field in one spec
// is the parser's usual "non-repeated field specified multiple times".
#ifndef HPT_COORDINATOR_SPEC_SPEC_NAMES_H_
#define HPT_COORDINATOR_SPEC_SPEC_NAMES_H_

#include <string>

namespace hpt {

// `text` with every old field name rewritten; text it cannot follow (an
// unterminated string, unbalanced braces) comes back as it is, for the
// parser to report.
std::string UpgradeJobSpecText(const std::string& text);

}  // namespace hpt

#endif  // HPT_COORDINATOR_SPEC_SPEC_NAMES_H_
