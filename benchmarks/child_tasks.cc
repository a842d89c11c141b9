#include "benchmarks/child_tasks.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

ABSL_FLAG(std::string, task, "", "Internal: one repetition, run in a child process.");
ABSL_FLAG(std::string, task_out, "", "Internal: where --task writes its result.");

namespace hpt {
namespace {

std::vector<std::string>& Argv() {
  static std::vector<std::string> argv;
  return argv;
}

pid_t Start(const std::string& task, const std::string& out) {
  std::vector<std::string> args = Argv();
  args.push_back("--task=" + task);
  args.push_back("--task_out=" + out);
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, c_args.data(), environ) != 0) {
    return -1;
  }
  return pid;
}

}  // namespace

void SaveArgv(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) Argv().push_back(argv[i]);
}

bool IsChildTask() { return !absl::GetFlag(FLAGS_task).empty(); }
std::string ChildTask() { return absl::GetFlag(FLAGS_task); }

int WriteChildResult(const std::string& text) {
  std::ofstream out(absl::GetFlag(FLAGS_task_out));
  out << text;
  return out ? 0 : 1;
}

void RunChildTasks(const std::vector<std::string>& tasks, int parallel,
                   const std::string& scratch,
                   const std::function<void(size_t, const std::string&)>& done) {
  std::filesystem::create_directories(scratch);
  std::map<pid_t, size_t> running;
  std::vector<std::string> files;
  for (const std::string& t : tasks) {
    files.push_back(absl::StrCat(scratch, "/", absl::StrReplaceAll(t, {{":", "-"}}), ".txt"));
  }
  size_t next = 0;
  while (next < tasks.size() || !running.empty()) {
    while (next < tasks.size() && int(running.size()) < std::max(1, parallel)) {
      std::filesystem::remove(files[next]);
      const pid_t pid = Start(tasks[next], files[next]);
      if (pid < 0) {
        done(next, "");
      } else {
        running[pid] = next;
      }
      ++next;
    }
    if (running.empty()) continue;
    int status = 0;
    const pid_t ended = wait(&status);
    if (ended < 0) break;
    auto it = running.find(ended);
    if (it == running.end()) continue;
    const size_t i = it->second;
    running.erase(it);
    std::ifstream in(files[i]);
    std::stringstream text;
    text << in.rdbuf();
    done(i, text.str());
  }
}

}  // namespace hpt
