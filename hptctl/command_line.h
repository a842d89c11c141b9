// hptctl's command line before Abseil parses it: a command's own --help
// (its flags with their defaults, from the help texts' "COMMAND:" parts)
// and unknown flags refused with exit 2, the documented code for a bad
// command line (Abseil's own parser exits 1, hptctl's "job failed").
//
//   if (std::optional<int> exit = HandleHelpAndUnknownFlags(argc, argv)) return *exit;
#ifndef HPT_HPTCTL_COMMAND_LINE_H_
#define HPT_HPTCTL_COMMAND_LINE_H_

#include <optional>
#include <string>
#include <vector>

namespace hpt {

// hptctl's commands, in kUsage's order.
const std::vector<std::string>& Commands();

// COMMAND's help: its line from kUsage, the flags that name it in their
// help text ("submit: ...") with their defaults, then the global flags.
// Empty for an unknown command.
std::string CommandHelp(const std::string& command);

// An exit code when the command line is answered here: --help or -h with
// a command prints CommandHelp (0; 2 for an unknown command); a flag
// hptctl does not define prints what is wrong (2). nullopt: go on.
std::optional<int> HandleHelpAndUnknownFlags(int argc, char** argv);

}  // namespace hpt

#endif  // HPT_HPTCTL_COMMAND_LINE_H_
