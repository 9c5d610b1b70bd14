// The compute interface every backend (CPU/OpenMP, CUDA) implements. Solvers talk only to
// this; kernels know arrays and a GridDesc, nothing about decks, MPI or files.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include "grid.hpp"
#include "stencil.hpp"

namespace heatsolve {

enum class BackendKind { Auto, Cpu, Cuda };
enum class ReduceOp { Sum, SumSquares, MaxAbs };

// Thrown for a requested backend that cannot be used (no device, built without CUDA...).
struct BackendError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A buffer in the backend's memory space (host for CPU, device for CUDA), freed on scope exit.
template <typename T>
class Array {
 public:
  virtual ~Array() = default;
  virtual T* data() = 0;
  virtual const T* data() const = 0;
  virtual std::size_t size() const = 0;
  virtual void copy_from_host(const T* src) = 0;
  virtual void copy_to_host(T* dst) const = 0;
  virtual void copy_from(const Array<T>& other) = 0;  // same backend, same size
};

struct BackendOptions {
  std::string kernel = "auto";      // stencil variant name (CUDA); "auto" times candidates
  std::array<int, 3> block{0, 0, 0};  // optional thread-block shape; 0 = variant default
  int device = -1;                  // CUDA device; -1 = current
};

template <typename T>
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu" | "cuda"
  virtual std::string description() const = 0;  // device name, thread count
  virtual std::unique_ptr<Array<T>> allocate(std::size_t n) = 0;

  // Chooses the stencil variant for this grid (CUDA auto-tuning times candidates here) and
  // returns its name. Called once before the time loop; stencil() uses the choice.
  virtual std::string prepare(const GridDesc& g) = 0;

  // Fills the ghost cells of u from the face conditions; Exchange faces are left untouched.
  virtual void apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc) = 0;
  // One sweep over the interior: out = stencil(u) (+ cs*f when f is not null).
  virtual void stencil(const T* u, T* out, const T* f, const GridDesc& g,
                       const StencilCoeffs<T>& c) = 0;

  // Reductions over interior cells, accumulated in double, deterministic.
  virtual double reduce(const T* u, const GridDesc& g, ReduceOp op) = 0;
  virtual double reduce_diff(const T* a, const T* b, const GridDesc& g, ReduceOp op) = 0;
  // Of the Poisson residual r = f + lap u (f may be null); ghosts of u must be filled.
  virtual double reduce_residual(const T* u, const T* f, const GridDesc& g, ReduceOp op) = 0;

  virtual void synchronize() {}
};

// True when a CUDA device can be used by this build on this machine.
bool cuda_device_available();
// Creates a backend; Auto picks CUDA when a device is available, else CPU.
template <typename T>
std::unique_ptr<Backend<T>> make_backend(BackendKind kind, const BackendOptions& opts);

}  // namespace heatsolve
