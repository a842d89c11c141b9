// Benchmarks that repeat a job over seeds run each repetition in a child
// process of their own binary, `parallel` at a time: LibTorch's random
// generator is global and the GPU worker seeds it per step, so two runs
// in one process would draw each other's dropout masks, and on two cores
// two single-threaded processes train the small models ~1.7x faster than
// one process on both (switch_frontier, measured).
//
//   int main(...) { SaveArgv(argc, argv); ... }
//   if (IsChildTask()) return WriteChildResult(DoOne(ChildTask()));
//   RunChildTasks({"swe:42", ...}, 2, dir, [](size_t i, const std::string& text) {...});
#ifndef HPT_BENCHMARKS_CHILD_TASKS_H_
#define HPT_BENCHMARKS_CHILD_TASKS_H_

#include <functional>
#include <string>
#include <vector>

namespace hpt {

// The command line a child is started with (plus its task); call first in
// main.
void SaveArgv(int argc, char** argv);

// In a child: its task ("" in the parent), and where its result goes.
bool IsChildTask();
std::string ChildTask();
// Writes `text` as the child's result; returns main's exit code.
int WriteChildResult(const std::string& text);

// Starts a child per task, `parallel` at a time, each writing its result to
// a file under `scratch`; `done(i, text)` sees task i's result as it ends
// (empty text: the child died before writing one).
void RunChildTasks(const std::vector<std::string>& tasks, int parallel,
                   const std::string& scratch,
                   const std::function<void(size_t, const std::string&)>& done);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_CHILD_TASKS_H_
