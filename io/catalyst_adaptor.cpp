// The ParaView-free side of in-situ output: the schedule, and loading the module that holds
// the ParaView side (io/catalyst/catalyst_module.hpp says why it is a module).
#include "io/catalyst_adaptor.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "io/catalyst/catalyst_module.hpp"

namespace heatsolve {

namespace fs = std::filesystem;

bool CatalystSchedule::any_due(std::int64_t step, bool last) const {
  for (std::size_t i = 0; i < every_.size(); ++i)
    if (due(i, step, last)) return true;
  return false;
}

std::int64_t CatalystSchedule::steps_to_next(std::int64_t step) const {
  std::int64_t next = std::numeric_limits<std::int64_t>::max();
  for (const std::int64_t e : every_) next = std::min(next, e - step % e);
  return next;
}

namespace {

// The module: $HEATSOLVE_CATALYST_MODULE, else next to the executable (the build tree), else
// in ../lib/heatsolve (an install). "" when none exists.
std::string catalyst_module_path() {
  if (const char* env = std::getenv("HEATSOLVE_CATALYST_MODULE"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& candidate :
       {exe.parent_path() / kCatalystModuleName,
        exe.parent_path() / ".." / "lib" / "heatsolve" / kCatalystModuleName})
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
  return "";
}

// Loaded once and kept for the life of the process: ParaView and its Python interpreter leave
// handlers behind (atexit, Python's finalization) that must not outlive their code. Global
// symbols: Python extension modules that ParaView imports expect libpython's symbols there.
CatalystCreateFunction load_catalyst_module() {
  static CatalystCreateFunction create = [] {
    const std::string path = catalyst_module_path();
    if (path.empty())
      throw std::runtime_error(
          fmt::format("output.catalyst: the Catalyst module {} is neither next to heatsolve nor in "
                      "../lib/heatsolve (set HEATSOLVE_CATALYST_MODULE to its path)",
                      kCatalystModuleName));
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!module)
      throw std::runtime_error(
          fmt::format("output.catalyst: cannot load the Catalyst module: {}", dlerror()));
    auto* entry = reinterpret_cast<CatalystCreateFunction>(dlsym(module, kCatalystCreateSymbol));
    if (!entry)
      throw std::runtime_error(
          fmt::format("output.catalyst: {} has no {}: {}", path, kCatalystCreateSymbol, dlerror()));
    return entry;
  }();
  return create;
}

CatalystSchedule schedule_of(const Config& cfg) {
  std::vector<std::int64_t> every;
  for (const CatalystScript& s : cfg.catalyst) every.push_back(s.every);
  return CatalystSchedule(std::move(every));
}

}  // namespace

bool catalyst_available() {
#ifdef HEATSOLVE_HAVE_CATALYST
  return !catalyst_module_path().empty();
#else
  return false;
#endif
}

struct CatalystAdaptor::Impl {
  std::unique_ptr<CatalystPipelines> pipelines;
};

namespace {
std::unique_ptr<CatalystPipelines> make_pipelines(const Config& cfg, const OutputGrid& grid,
                                                  const void* comm) {
#ifdef HEATSOLVE_HAVE_CATALYST
  return std::unique_ptr<CatalystPipelines>(load_catalyst_module()(&cfg, &grid, comm));
#else
  (void)cfg, (void)grid, (void)comm;
  throw std::runtime_error("output.catalyst: this heatsolve was built without ParaView Catalyst");
#endif
}
}  // namespace

CatalystAdaptor::CatalystAdaptor(const Config& cfg, const OutputGrid& grid)
    : impl_(std::make_unique<Impl>()), schedule_(schedule_of(cfg)) {
  impl_->pipelines = make_pipelines(cfg, grid, nullptr);
}

#ifdef HEATSOLVE_HAVE_MPI
CatalystAdaptor::CatalystAdaptor(const Config& cfg, const OutputGrid& grid, MPI_Comm comm)
    : impl_(std::make_unique<Impl>()), schedule_(schedule_of(cfg)) {
  impl_->pipelines = make_pipelines(cfg, grid, &comm);
}
#endif

CatalystAdaptor::~CatalystAdaptor() = default;

void CatalystAdaptor::co_process(std::int64_t step, double time, bool last, const float* data,
                                 const Block& block) {
  impl_->pipelines->co_process(schedule_, step, time, last, data, block);
}

void CatalystAdaptor::co_process(std::int64_t step, double time, bool last, const double* data,
                                 const Block& block) {
  impl_->pipelines->co_process(schedule_, step, time, last, data, block);
}

nlohmann::json CatalystAdaptor::report() const {
  return impl_->pipelines->report();
}

}  // namespace heatsolve
