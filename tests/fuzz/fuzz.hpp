// Shared by the libFuzzer targets: each reads one untrusted input the way attain reads it, and
// must end in a value or an InputError, never a crash, a hang or unbounded memory.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace attain::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A file of this process holding the input, for readers that take a path (they also check the
// file's type and size): rewritten for every input (plainly: no fsync, thousands a second),
// removed at exit.
inline const std::filesystem::path& input_file(std::string_view bytes) {
  static const std::filesystem::path p = [] {
    auto dir = std::filesystem::temp_directory_path() /
               ("attain-fuzz-" + std::to_string(static_cast<long>(::getpid())));
    std::filesystem::create_directories(dir);
    return dir / "input";
  }();
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(p.parent_path(), ec);
    }
  } cleanup;
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

}  // namespace attain::fuzz
