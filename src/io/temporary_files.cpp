#include "attn/temporary_files.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

namespace attn {

namespace {

// Fixed storage: a signal handler may neither allocate nor take a lock. A slot's path is
// written before its state turns `live` (release), and read only while it is live (acquire).
constexpr int slots = 64;
constexpr size_t path_capacity = 4096;  // PATH_MAX on Linux
enum : int { free_slot = 0, claimed = 1, live = 2 };
std::array<std::atomic<int>, slots> state{};
std::array<std::array<char, path_capacity>, slots> paths{};

}  // namespace

temporary_file::temporary_file(const std::string& path) {
  if (path.size() >= path_capacity) return;
  for (int i = 0; i < slots; ++i) {
    int expected = free_slot;
    if (!state[i].compare_exchange_strong(expected, claimed, std::memory_order_acquire)) continue;
    std::memcpy(paths[i].data(), path.c_str(), path.size() + 1);
    state[i].store(live, std::memory_order_release);
    slot_ = i;
    return;
  }
}

temporary_file::~temporary_file() {
  if (slot_ >= 0) state[slot_].store(free_slot, std::memory_order_release);
}

void remove_temporary_files() noexcept {
  for (int i = 0; i < slots; ++i)
    if (state[i].load(std::memory_order_acquire) == live) ::unlink(paths[i].data());
}

}  // namespace attn
