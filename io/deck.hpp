// Deck parsing and validation: YAML text -> validated Config, or a DeckError that points at
// the offending file:line:column.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/config.hpp"

namespace heatsolve {

// A problem in the user's input. what() is "file:line:column: message" (1-based line/column).
class DeckError : public std::runtime_error {
 public:
  DeckError(std::string file, int line, int column, std::string message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_, column_;
  std::string message_;
};

// Optional parts of this build (and of this machine) that a deck may ask for: a deck asking for
// a missing one is refused at validation. Tests pass other values to check the refusal in any
// build.
struct DeckFeatures {
  bool catalyst = false;  // output.catalyst (ParaView Catalyst in-situ output)
  bool zfp = false;       // output.compression {type: zfp} (built with the ZFP library)
  // execution.backend: cuda on this machine: asked only for decks that name it; returns why
  // no CUDA device can be used ("" when one can). Unset: not checked (of_this_build(): the
  // deck alone; `heatsolve validate` and `run` set it, app/run_command.cpp).
  std::function<std::string()> cuda_device_problem;
  // The compute capability (10 major + minor; 0 = no GPU) of the GPU the run will use, asked
  // only for a deck naming a variant with a minimum (execution.kernel: 2.5d-tma). Empty: not
  // known (`heatsolve validate`, which may run where the deck will not), no check; `heatsolve
  // run` sets it.
  std::function<int()> compute_capability;
  // Materials by region: the deck's checks visit every cell (each region's cells, the
  // per-cell stability limit), in time and memory that grow with the grid. > 0: a deck with
  // `materials` on a grid of more cells is refused (the fuzz target, whose every input must
  // finish in seconds); 0: no limit (heatsolve).
  std::int64_t max_region_cells = 0;
  static DeckFeatures of_this_build();
};

// Reads, applies `--set key.path=value` overrides (in order), validates. Throws DeckError.
Config load_deck(const std::string& path, const std::vector<std::string>& overrides = {},
                 const DeckFeatures& features = DeckFeatures::of_this_build());
// Same, for deck text already in memory; `source_name` is used in error messages, and
// relative paths in the deck resolve against its directory.
Config parse_deck(const std::string& text, const std::string& source_name,
                  const std::vector<std::string>& overrides = {},
                  const DeckFeatures& features = DeckFeatures::of_this_build());

}  // namespace heatsolve
