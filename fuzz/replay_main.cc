// A fuzz target's corpus as a regression test: every file under the folders
// (or the files) named on the command line goes through the target's
// LLVMFuzzerTestOneInput once, built with the project's own compiler. A
// target that no longer builds, or an input that crashes it, fails the test
// suite; tools/fuzz.sh runs the same targets under libFuzzer to find new
// inputs.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> Inputs(const char* arg) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path path(arg);
  if (std::filesystem::is_directory(path)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(path)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  } else if (std::filesystem::is_regular_file(path)) {
    files.push_back(path);
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::filesystem::path> files = Inputs(argv[i]);
    if (files.empty()) {
      std::fprintf(stderr, "%s: no corpus inputs there; give a folder of inputs or a file\n",
                   argv[i]);
      return 2;
    }
    for (const std::filesystem::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
  }
  if (inputs == 0) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::printf("%d corpus input(s) replayed, no crash\n", inputs);
  return 0;
}
