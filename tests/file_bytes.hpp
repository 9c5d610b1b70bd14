// A file's bytes as a string ("" where it cannot be read), for tests that compare files.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace heatsolve::test_support {

inline std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace heatsolve::test_support
