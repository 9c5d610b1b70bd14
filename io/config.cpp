// Names of the Config enums. These are the spellings the deck accepts (the validator builds
// its choice lists from them), so deck keywords and the summary echo never drift apart.
#include "io/config.hpp"

namespace heatsolve {

const char* to_string(ProblemType p) {
  switch (p) {
    case ProblemType::Heat:
      return "heat";
    case ProblemType::Poisson:
      return "poisson";
  }
  return "?";
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::Float:
      return "float";
    case Precision::Double:
      return "double";
  }
  return "?";
}

const char* to_string(BackendKind b) {
  switch (b) {
    case BackendKind::Auto:
      return "auto";
    case BackendKind::Cpu:
      return "cpu";
    case BackendKind::Cuda:
      return "cuda";
  }
  return "?";
}

const char* to_string(BoundaryType b) {
  switch (b) {
    case BoundaryType::Dirichlet:
      return "dirichlet";
    case BoundaryType::Neumann:
      return "neumann";
    case BoundaryType::Periodic:
      return "periodic";
    case BoundaryType::Exchange:
      return "exchange";
    case BoundaryType::Convective:
      return "convective";
    case BoundaryType::HeatFlux:
      return "heat_flux";
    case BoundaryType::Robin:
      return "robin";
    case BoundaryType::Fixed:
      return "fixed";
  }
  return "?";
}

const char* to_string(ShapeType s) {
  switch (s) {
    case ShapeType::None:
      return "none";
    case ShapeType::Uniform:
      return "uniform";
    case ShapeType::Gaussian:
      return "gaussian";
    case ShapeType::Box:
      return "box";
    case ShapeType::Sine:
      return "sine";
    case ShapeType::File:
      return "file";
  }
  return "?";
}

const char* to_string(SolverMethod m) {
  switch (m) {
    case SolverMethod::Jacobi:
      return "jacobi";
    case SolverMethod::Anderson:
      return "anderson";
    case SolverMethod::Multigrid:
      return "multigrid";
    case SolverMethod::MultigridCG:
      return "mg-cg";
  }
  return "?";
}

const char* to_string(HaloMode h) {
  switch (h) {
    case HaloMode::Auto:
      return "auto";
    case HaloMode::Staged:
      return "staged";
    case HaloMode::CudaAware:
      return "cuda-aware";
    case HaloMode::Ipc:
      return "ipc";
  }
  return "?";
}

const char* to_string(TimeScheme s) {
  switch (s) {
    case TimeScheme::Explicit:
      return "explicit";
    case TimeScheme::ImplicitEuler:
      return "implicit-euler";
    case TimeScheme::CrankNicolson:
      return "crank-nicolson";
  }
  return "?";
}

double scheme_theta(TimeScheme s) {
  switch (s) {
    case TimeScheme::Explicit:
      return 0.0;
    case TimeScheme::ImplicitEuler:
      return 1.0;
    case TimeScheme::CrankNicolson:
      return 0.5;
  }
  return 0.0;
}

const char* to_string(MultigridCycle c) {
  return c == MultigridCycle::V ? "v" : c == MultigridCycle::F ? "f" : "fmg";
}

const char* to_string(MultigridSmoother s) {
  return s == MultigridSmoother::Jacobi ? "jacobi" : "chebyshev";
}

const char* to_string(Prolongation p) {
  return p == Prolongation::Linear ? "linear" : p == Prolongation::Constant ? "constant" : "cubic";
}

const char* to_string(CompressionType c) {
  switch (c) {
    case CompressionType::None:
      return "none";
    case CompressionType::Deflate:
      return "deflate";
    case CompressionType::Zfp:
      return "zfp";
  }
  return "?";
}

const char* to_string(SingularPolicy s) {
  return s == SingularPolicy::Refuse ? "refuse" : "compatible-mean";
}

}  // namespace heatsolve
