// CPU (OpenMP) backend: the reference implementation that tests compare every other
// backend against, and the default on machines without a GPU.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/field/cpu/convert_cpu.hpp"
#include "kernels/multigrid/cpu/dense_apply_cpu.hpp"
#include "kernels/multigrid/cpu/transfer_cpu.hpp"
#include "kernels/stencil/cpu/variable_cpu.hpp"

namespace heatsolve {

template <typename T>
class CpuArray final : public Array<T> {
 public:
  explicit CpuArray(std::size_t n) : data_(n) {}
  T* data() override { return data_.data(); }
  const T* data() const override { return data_.data(); }
  std::size_t size() const override { return data_.size(); }
  void copy_from_host(const T* src) override;
  void copy_to_host(T* dst) const override;
  void copy_from(const Array<T>& other) override;
  void set_zero() override { std::fill(data_.begin(), data_.end(), T(0)); }

 private:
  std::vector<T> data_;
};

// Ghost-cell fill shared by the CPU backend and host-side tests.
template <typename T>
void cpu_apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc);

template <typename T>
void cpu_stencil(const T* u, T* out, const T* f, const GridDesc& g, const StencilCoeffs<T>& c);

// The mean of each coarse cell's children of cpu_stencil (a residual restricted without being
// stored): the bits of cpu_stencil and cpu_restrict_average. 3D: the coarse planes [p0, p1)
// only (p1 < 0: to the last), each with the whole call's bits.
template <typename T>
void cpu_stencil_restrict(const T* u, const T* f, const GridDesc& gf, const StencilCoeffs<T>& c,
                          T* coarse, const GridDesc& gc, const std::array<int, 3>& ratio,
                          int p0 = 0, int p1 = -1);
// sum of cpu_stencil's values squared over the interior: the bits of cpu_stencil and cpu_dot.
template <typename T>
double cpu_stencil_square_sum(const T* u, const T* f, const GridDesc& g, const StencilCoeffs<T>& c);
// cpu_stencil restricted to the cells of r (identical arithmetic per point).
template <typename T>
void cpu_stencil_region(const T* u, T* out, const T* f, const GridDesc& g,
                        const StencilCoeffs<T>& c, const CellRange& r);

// Halo face packing on host memory (contract: Backend::pack_face / unpack_face).
template <typename T>
void cpu_pack_face(const T* u, const GridDesc& g, int face, T* buffer);
template <typename T>
void cpu_unpack_face(T* u, const GridDesc& g, int face, const T* buffer);

template <typename T>
class CpuBackend final : public Backend<T> {
 public:
  std::string name() const override { return "cpu"; }
  std::string description() const override;
  std::unique_ptr<Array<T>> allocate(std::size_t n) override {
    return std::make_unique<CpuArray<T>>(n);
  }
  std::string prepare(const GridDesc&) override { return "cpu-openmp"; }
  void apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc) override {
    cpu_apply_boundary(u, g, bc);
  }
  void stencil(const T* u, T* out, const T* f, const GridDesc& g,
               const StencilCoeffs<T>& c) override {
    cpu_stencil(u, out, f, g, c);
  }
  bool stencil_region(const T* u, T* out, const T* f, const GridDesc& g, const StencilCoeffs<T>& c,
                      const CellRange& r) override {
    cpu_stencil_region(u, out, f, g, c, r);
    return true;
  }
  void stencil_variable(const T* u, T* out, const T* f, const GridDesc& g,
                        const VariableCoeffs<T>& c, const CellRange& r) override {
    cpu_stencil_variable(u, out, f, g, c, r);
  }
  // The sweeps read the stored field; a described form's factors are kept so that a source
  // whose strength changes over time is refilled in place (one pass, no staging copy).
  void describe_source(const T* field, const GridDesc& g, const SeparableSource<T>* form) override;
  bool rescale_source(T* field, const GridDesc& g, T offset, T scale) override;
  // Under HEATSOLVE_TEST_CPU_PLANE_PASSES split sweeps take the face rules per region (the
  // base class's ghost fill, then the region) as the GPU's do, so that the CPU MPI suite runs
  // that schedule too; otherwise they fill the ghosts once.
  bool region_rules_in_sweep() const override {
    static const bool emulate = std::getenv("HEATSOLVE_TEST_CPU_PLANE_PASSES") != nullptr;
    return emulate;
  }
  // Unsupported (one lane: nothing to overlap), except under HEATSOLVE_TEST_CPU_PLANE_PASSES,
  // a test hook that emulates the pass by single sweeps over the planes the range depends on,
  // so that the CPU MPI suite runs the overlapped deep-halo schedule (Simulation::deep_pass).
  bool stencil_steps_planes(const T* u, T* out, const T* f, const GridDesc& g,
                            const StencilCoeffs<T>& c, const BoundaryFaces& bc, int steps, int p0,
                            int p1) override;
  void pack_face(const T* u, const GridDesc& g, int face, T* buffer) override {
    cpu_pack_face(u, g, face, buffer);
  }
  void unpack_face(T* u, const GridDesc& g, int face, const T* buffer) override {
    cpu_unpack_face(u, g, face, buffer);
  }
  double reduce(const T* u, const GridDesc& g, ReduceOp op) override;
  double reduce_diff(const T* a, const T* b, const GridDesc& g, ReduceOp op) override;
  double reduce_residual(const T* u, const T* f, const GridDesc& g, ReduceOp op) override;
  void combine(T* out, const T* const* in, const double* coeffs, int count,
               const GridDesc& g) override;
  void gram(const T* a, int na, const T* b, int nb, std::size_t ld, std::size_t n,
            double* c_host) override;
  void restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                        const std::array<int, 3>& ratio) override {
    cpu_restrict_average(fine, gf, coarse, gc, ratio);
  }
  void prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                   const std::array<int, 3>& ratio, Prolongation p) override {
    cpu_prolong_add(coarse, gc, fine, gf, ratio, p);
  }
  void interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                   const std::array<int, 3>& ratio, Prolongation p) override {
    cpu_interpolate(coarse, gc, fine, gf, ratio, p);
  }
  void dense_apply_add(const T* m, const T* r, T* x, const GridDesc& g) override {
    cpu_dense_apply_add(m, r, x, g);
  }
  double dot(const T* a, const T* b, const GridDesc& g) override { return cpu_dot(a, b, g); }
  void stencil_restrict(T* u, const T* f, const GridDesc& gf, const StencilCoeffs<T>& c,
                        const BoundaryFaces& bc, T* coarse, const GridDesc& gc,
                        const std::array<int, 3>& ratio, T* scratch) override {
    (void)scratch;
    apply_boundary(u, gf, bc);
    cpu_stencil_restrict(u, f, gf, c, coarse, gc, ratio);
  }
  bool stencil_restrict_planes(T* u, const T* f, const GridDesc& gf, const StencilCoeffs<T>& c,
                               const BoundaryFaces& bc, T* coarse, const GridDesc& gc,
                               const std::array<int, 3>& ratio, int p0, int p1) override {
    if (gc.dims != 3) return false;
    if (p0 >= p1) return true;  // the question alone, or an empty part
    apply_boundary(u, gf, bc);  // the same ghosts every part
    cpu_stencil_restrict(u, f, gf, c, coarse, gc, ratio, p0, p1);
    return true;
  }
  double stencil_square_sum(const T* u, const T* f, const GridDesc& g, const StencilCoeffs<T>& c,
                            T* scratch) override {
    (void)scratch;
    return cpu_stencil_square_sum(u, f, g, c);
  }
  void to_float(const T* src, float* dst, std::size_t n, double scale = 1.0) override {
    cpu_to_float(src, dst, n, scale);
  }
  void add_float(T* dst, double a, const float* src, double b, std::size_t n) override {
    cpu_add_float(dst, a, src, b, n);
  }

 private:
  struct Described {
    const T* field = nullptr;
    GridDesc g;
    std::vector<T> plane, column;
  };
  std::vector<Described> described_;
};

}  // namespace heatsolve
