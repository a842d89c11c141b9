// For process_setup_test: applies UseShortThreadSpins, then prints the two
// variables it sets and how many times main ran (a re-execution runs it
// twice; the count travels in HPT_PROBE_RUNS).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/process_setup.h"

int main(int argc, char** argv) {
  const char* runs = std::getenv("HPT_PROBE_RUNS");
  setenv("HPT_PROBE_RUNS", std::to_string(runs == nullptr ? 1 : std::atoi(runs) + 1).c_str(), 1);
  hpt::UseShortThreadSpins(argv);
  auto value = [](const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? "unset" : v;
  };
  std::printf("GOMP_SPINCOUNT=%s OPENBLAS_THREAD_TIMEOUT=%s runs=%s\n", value("GOMP_SPINCOUNT"),
              value("OPENBLAS_THREAD_TIMEOUT"), value("HPT_PROBE_RUNS"));
  return 0;
}
