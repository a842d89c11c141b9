#include "coordinator/spec/spec_names.h"

#include <cctype>
#include <cstring>
#include <vector>

namespace hpt {
namespace {

struct Rename {
  const char* message;  // the enclosing field of JobSpec
  const char* old_name;
  const char* new_name;
};

constexpr Rename kRenamed[] = {
    {"data", "window", "input_steps"},
    {"hpt", "window", "check_window_samples"},
    {"hpt", "window_steps", "check_window_steps"},
};

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

size_t SkipSpace(const std::string& s, size_t i) {
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
    } else if (s[i] == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else {
      break;
    }
  }
  return i;
}

// The index after the string literal starting at s[i]; npos if it never ends.
size_t SkipString(const std::string& s, size_t i) {
  const char quote = s[i];
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == quote) {
      return i + 1;
    } else if (s[i] == '\n') {
      return std::string::npos;
    }
  }
  return std::string::npos;
}

}  // namespace

std::string UpgradeJobSpecText(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::vector<std::string> path;  // the message fields we are inside
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      const size_t end = SkipString(text, i);
      if (end == std::string::npos) return text;
      out.append(text, i, end - i);
      i = end;
    } else if (c == '#') {
      const size_t end = SkipSpace(text, i);
      out.append(text, i, end - i);
      i = end;
    } else if (c == '}' || c == '>') {
      if (path.empty()) return text;
      path.pop_back();
      out += c;
      ++i;
    } else if (IsIdentStart(c) && (i == 0 || !IsIdent(text[i - 1]) && text[i - 1] != '.')) {
      size_t end = i;
      while (end < text.size() && IsIdent(text[end])) ++end;
      std::string name = text.substr(i, end - i);
      // A field name is followed by ':' (a value) or an opening brace.
      size_t next = SkipSpace(text, end);
      const bool colon = next < text.size() && text[next] == ':';
      const size_t brace = colon ? SkipSpace(text, next + 1) : next;
      const bool opens = brace < text.size() && (text[brace] == '{' || text[brace] == '<');
      if (colon || opens) {
        for (const Rename& r : kRenamed) {
          if (path.size() == 1 && path[0] == r.message && name == r.old_name) {
            name = r.new_name;
            break;
          }
        }
      }
      out += name;
      if (opens) {
        path.push_back(name);
        out.append(text, end, brace + 1 - end);
        i = brace + 1;
      } else {
        i = end;
      }
    } else {
      out += c;
      ++i;
    }
  }
  return path.empty() ? out : text;
}

}  // namespace hpt
