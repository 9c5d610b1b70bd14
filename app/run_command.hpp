// `heatsolve run` and `heatsolve validate`: deck -> validated config -> solver -> writers.
#pragma once

#include <string>
#include <vector>

namespace heatsolve {

struct RunOptions {
  std::string deck;
  std::vector<std::string> overrides;  // --set key.path=value
  bool overwrite = false;
  bool quiet = false;
  std::string restart;  // checkpoint path or "latest"; empty = fresh start
};

int run_command(const RunOptions& opts);
int validate_command(const RunOptions& opts);

}  // namespace heatsolve
