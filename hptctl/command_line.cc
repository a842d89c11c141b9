#include "hptctl/command_line.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <regex>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/likely_names.h"
#include "hptctl/usage.h"

namespace hpt {
namespace {

// Abseil's own flags, which every binary takes.
bool IsBuiltinFlag(const std::string& name) {
  static const char* const kBuiltin[] = {"help",      "helpfull",  "helpshort", "helppackage",
                                         "helpmatch", "version",   "flagfile",  "fromenv",
                                         "tryfromenv", "undefok",  "only_check_args"};
  for (const char* b : kBuiltin) {
    if (name == b) return true;
  }
  return false;
}

// hptctl's own flags (this folder's and the TLS flags), by name.
std::map<std::string, absl::CommandLineFlag*> OwnFlags() {
  std::map<std::string, absl::CommandLineFlag*> out;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string file(flag->Filename());
    if (absl::StrContains(file, "hptctl/") || absl::StrContains(file, "tls_flags")) {
      out[std::string(name)] = flag;
    }
  }
  return out;
}

// The commands a flag's help text names ("submit: ...; sweep: ...",
// "report --format=html: ...").
bool NamesCommand(const std::string& help, const std::string& command) {
  const std::regex pattern("(^|[;,.] )" + command + "( --[a-z_=]+)?:");
  return std::regex_search(help, pattern);
}

bool NamesAnyCommand(const std::string& help) {
  for (const std::string& c : Commands()) {
    if (NamesCommand(help, c)) return true;
  }
  return false;
}

// The flags `command` takes: its own and every command's (all of
// hptctl's where the command is not known).
std::vector<std::string> FlagNamesOf(const std::string& command) {
  std::vector<std::string> names;
  for (const auto& [name, flag] : OwnFlags()) {
    const std::string help = flag->Help();
    if (command.empty() || NamesCommand(help, command) || !NamesAnyCommand(help)) {
      names.push_back(name);
    }
  }
  return names;
}

std::string FlagLine(const absl::CommandLineFlag& flag) {
  const std::string def = flag.DefaultValue();
  return absl::StrCat("  --", flag.Name(), def.empty() ? "" : "=" + def, "\n      ",
                      flag.Help(), "\n");
}

// The command a line of kUsage introduces ("  submit   submit a job ..."),
// or "" for any other line (a continuation is indented further).
std::string CommandOf(absl::string_view line) {
  if (!absl::StartsWith(line, "  ") || absl::StartsWith(line, "   ")) return "";
  std::vector<std::string> words = absl::StrSplit(line.substr(2), ' ', absl::SkipEmpty());
  return words.empty() ? "" : words[0];
}

}  // namespace

const std::vector<std::string>& Commands() {
  static const auto* commands = new std::vector<std::string>([] {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(kUsage, '\n')) {
      if (std::string command = CommandOf(line); !command.empty()) out.push_back(command);
    }
    return out;
  }());
  return *commands;
}

std::string CommandHelp(const std::string& command) {
  const auto& commands = Commands();
  if (std::find(commands.begin(), commands.end(), command) == commands.end()) return "";
  std::string out = "hptctl " + command + ": ";
  bool in_command = false;
  for (absl::string_view line : absl::StrSplit(kUsage, '\n')) {
    if (const std::string first = CommandOf(line); !first.empty()) {
      in_command = first == command;
      if (in_command) absl::StrAppend(&out, absl::StripLeadingAsciiWhitespace(line.substr(2 + command.size())), "\n");
    } else if (in_command && absl::StartsWith(line, "   ")) {
      absl::StrAppend(&out, "  ", absl::StripLeadingAsciiWhitespace(line), "\n");
    } else {
      in_command = false;
    }
  }
  std::string own, global;
  for (const auto& [name, flag] : OwnFlags()) {
    const std::string help = flag->Help();
    if (NamesCommand(help, command)) {
      absl::StrAppend(&own, FlagLine(*flag));
    } else if (!NamesAnyCommand(help)) {
      absl::StrAppend(&global, FlagLine(*flag));
    }
  }
  if (!own.empty()) absl::StrAppend(&out, "\nflags of ", command, ":\n", own);
  absl::StrAppend(&out, "\nflags of every command:\n", global);
  return out;
}

std::optional<int> HandleHelpAndUnknownFlags(int argc, char** argv) {
  std::string command;
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help" || arg == "-help" || arg == "--helpshort") {
      help = true;
      continue;
    }
    if (!absl::StartsWith(arg, "-")) {
      if (command.empty() && !help && arg == "help") {
        help = true;  // `hptctl help [COMMAND]`, as `hptctl [COMMAND] --help`
      } else if (command.empty()) {
        command = arg;
      }
      continue;
    }
    std::string name = arg.substr(arg.find_first_not_of('-'));
    name = name.substr(0, name.find('='));
    if (IsBuiltinFlag(name) || absl::FindCommandLineFlag(name) != nullptr) continue;
    // --noFLAG for a boolean FLAG.
    if (absl::StartsWith(name, "no")) {
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name.substr(2));
      if (flag != nullptr && flag->IsOfType<bool>()) continue;
    }
    std::cerr << "hptctl: unknown flag --" << name << DidYouMean(name, FlagNamesOf(command))
              << (command.empty() ? std::string("; hptctl --help lists the commands")
                                  : "; hptctl " + command + " --help lists its flags")
              << std::endl;
    return 2;
  }
  if (!help) return std::nullopt;
  if (command.empty()) {
    std::cout << kUsage << std::endl;
    return 0;
  }
  const std::string text = CommandHelp(command);
  if (text.empty()) {
    std::cerr << "hptctl: unknown command '" << command << "'\n" << kUsage << std::endl;
    return 2;
  }
  std::cout << text;
  return 0;
}

}  // namespace hpt
