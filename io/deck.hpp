// Deck parsing and validation: YAML text -> validated Config, or a DeckError that points at
// the offending file:line:column.
#pragma once

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

// Reads, applies `--set key.path=value` overrides (in order), validates. Throws DeckError.
Config load_deck(const std::string& path, const std::vector<std::string>& overrides = {});
// Same, for deck text already in memory; `source_name` is used in error messages.
Config parse_deck(const std::string& text, const std::string& source_name,
                  const std::vector<std::string>& overrides = {});

}  // namespace heatsolve
