// Fields in checkpoints (io/checkpoint.hpp) hold a block's interior, x fastest; the solvers'
// arrays are padded. These convert between the two.
#pragma once

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "io/checkpoint.hpp"

namespace heatsolve {

// The interior of a padded host array as a checkpoint field.
template <typename T>
CheckpointField checkpoint_field_of(std::string name, const T* padded, const GridDesc& g) {
  CheckpointField f{std::move(name), {}};
  f.bytes.resize(g.interior_size() * sizeof(T));
  unsigned char* dst = f.bytes.data();
  const int nz = g.dims == 3 ? g.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j, dst += g.nx * sizeof(T))
      std::memcpy(dst, padded + g.index(0, j, g.dims == 3 ? k : 0), g.nx * sizeof(T));
  return f;
}

// An interior already extracted (x fastest) as a checkpoint field.
template <typename T>
CheckpointField checkpoint_field_of(std::string name, const std::vector<T>& interior) {
  CheckpointField f{std::move(name), {}};
  f.bytes.resize(interior.size() * sizeof(T));
  std::memcpy(f.bytes.data(), interior.data(), f.bytes.size());
  return f;
}

// Writes a checkpoint field into the interior of a padded host array (ghosts untouched).
template <typename T>
void insert_interior(T* padded, const GridDesc& g, const std::vector<unsigned char>& bytes) {
  if (bytes.size() != g.interior_size() * sizeof(T))
    throw std::runtime_error("checkpoint field does not match this rank's block");
  const int nz = g.dims == 3 ? g.nz : 1;
  const unsigned char* src = bytes.data();
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j, src += g.nx * sizeof(T))
      std::memcpy(padded + g.index(0, j, g.dims == 3 ? k : 0), src, g.nx * sizeof(T));
}

// The field `name` of a checkpoint read from `path`, or an error naming both.
inline const CheckpointField& checkpoint_field(const CheckpointState& s, const std::string& name,
                                               const std::string& path) {
  const CheckpointField* f = s.field(name);
  if (!f) throw std::runtime_error(fmt::format("checkpoint '{}': field '{}' missing", path, name));
  return *f;
}

}  // namespace heatsolve
