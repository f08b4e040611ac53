// Replays a fuzz target on files, without libFuzzer: `<target>_replay DIR_OR_FILE …` runs every
// file (directories recursively, in name order) through LLVMFuzzerTestOneInput. The normal test
// suite runs each target this way on the malformed corpus, the seeds and tests/fuzz_regressions,
// so an input that once crashed a fuzzer stays tested with gcc and under the sanitizers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path root = argv[i];
    if (fs::is_directory(root)) {
      for (const auto& entry : fs::recursive_directory_iterator(root))
        if (entry.is_regular_file() && entry.path().filename() != "README.md")
          files.push_back(entry.path());
    } else if (fs::exists(root)) {
      files.push_back(root);
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "%s\n", file.c_str());  // the last one named is the one that failed
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu files\n", files.size());
  return files.empty() ? 1 : 0;
}
