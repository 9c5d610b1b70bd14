// The ParaView side of in-situ output (io/catalyst_adaptor.hpp): a vtkCPProcessor and the
// scripts' pipelines. Built as the module libheatsolve_catalyst.so, which heatsolve loads only
// when a deck asks for output.catalyst.
#include "io/catalyst/catalyst_module.hpp"

#include <fmt/format.h>
#include <vtkCPDataDescription.h>
#include <vtkCPInputDataDescription.h>
#include <vtkCPProcessor.h>
#include <vtkCPPythonPipeline.h>
#include <vtkCellData.h>
#include <vtkDoubleArray.h>
#include <vtkFieldData.h>
#include <vtkFloatArray.h>
#include <vtkImageData.h>
#include <vtkLogger.h>
#include <vtkNew.h>
#include <vtkObjectFactory.h>
#include <vtkOutputWindow.h>
#include <vtkPythonInterpreter.h>
#include <vtkSmartPointer.h>
#include <vtkStringArray.h>

#include "core/stopwatch.hpp"
#ifdef HEATSOLVE_HAVE_RENDERING_OPENGL2
#include <vtkAutoInit.h>
#include <vtkRenderWindow.h>
VTK_MODULE_INIT(vtkRenderingOpenGL2);
#endif

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>
#ifdef HEATSOLVE_HAVE_MPI
#include <vtkMPI.h>
#endif

namespace heatsolve {

namespace {

using Clock = std::chrono::steady_clock;

// Collects what VTK prints while a script runs (Python's stdout and stderr reach
// vtkOutputWindow too), so that a failure's Python traceback becomes part of the error.
class CapturingOutputWindow : public vtkOutputWindow {
 public:
  static CapturingOutputWindow* New();
  vtkTypeMacro(CapturingOutputWindow, vtkOutputWindow);
  void DisplayText(const char* text) override {
    if (text) captured += text;
  }
  std::string captured;
};
vtkStandardNewMacro(CapturingOutputWindow);

// Routes VTK's output into a CapturingOutputWindow for its lifetime.
class OutputCapture {
 public:
  OutputCapture() : previous_(vtkOutputWindow::GetInstance()) {
    vtkOutputWindow::SetInstance(window_);
  }
  ~OutputCapture() { vtkOutputWindow::SetInstance(previous_); }
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;
  const std::string& text() const { return window_->captured; }
  // After a success: what the script printed goes where it would have gone.
  void pass_on() const {
    if (!text().empty()) previous_->DisplayText(text().c_str());
  }

 private:
  vtkSmartPointer<vtkOutputWindow> previous_;
  vtkNew<CapturingOutputWindow> window_;
};

// vtkCPPythonScriptPipeline prints a script's Python exception and reports success anyway. The
// exception it printed stays in sys.last_value (PyErr_Print), which tells: cleared before a
// script runs, raised (as this marker) after it when set.
constexpr const char* kFailureMarker = "heatsolve: the Catalyst script raised an exception";
constexpr const char* kClearPythonError =
    "import sys\nsys.last_type = sys.last_value = sys.last_traceback = None\n";

bool python_error_since_clear() {
  const std::string check = fmt::format(
      "import sys\nif getattr(sys, 'last_value', None) is not None:\n    raise "
      "RuntimeError('{}')\n",
      kFailureMarker);
  return vtkPythonInterpreter::RunSimpleString(check.c_str()) != 0;
}

// The captured text without the marker exception's own traceback.
std::string without_marker(const std::string& text) {
  const std::size_t marker = text.rfind(kFailureMarker);
  if (marker == std::string::npos) return text;
  const std::size_t traceback = text.rfind("Traceback (most recent call last):", marker);
  return text.substr(0, traceback == std::string::npos ? marker : traceback);
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : absolute).lexically_normal().string();
}

std::string indented(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out += "\n    " + text.substr(start, end - start);
    start = end + 1;
  }
  return out.empty() ? " (ParaView printed no message)" : ":" + out;
}

// Python string literal of `s` (a file name), for the checks run through the interpreter.
std::string python_literal(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

class ParaViewPipelines final : public CatalystPipelines {
 public:
  ParaViewPipelines(const Config& cfg, const OutputGrid& grid, const void* comm);
  void co_process(const CatalystSchedule& schedule, std::int64_t step, double time, bool last,
                  const float* data, const Block& block) override {
    run(schedule, step, time, last, data, block);
  }
  void co_process(const CatalystSchedule& schedule, std::int64_t step, double time, bool last,
                  const double* data, const Block& block) override {
    run(schedule, step, time, last, data, block);
  }
  ~ParaViewPipelines() override { processor->Finalize(); }
  nlohmann::json report() const override;

 private:
  vtkNew<vtkCPProcessor> processor;
  std::vector<vtkSmartPointer<vtkCPPythonPipeline>> pipelines;
  std::vector<std::string> scripts;
  OutputGrid grid;
  // Absolute: Catalyst puts v2 scripts' extracts relative to it (its working directory), and
  // v1 scripts get it in the user data.
  std::string output_directory;
  std::string step_word;      // "step" (heat) or "iteration" (Poisson), for messages
  vtkNew<vtkFieldData> user;  // what every script gets besides the grid (output directory)
  std::int64_t calls = 0;     // co_process calls that ran at least one script
  std::int64_t script_runs = 0;
  double seconds = 0;
  double first_call_seconds = 0;
  double setup_seconds = 0;  // starting Catalyst and loading the scripts
#ifdef HEATSOLVE_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL;
#endif

  // The ranks agree on a script's outcome, so that all of them go on or all of them stop.
  bool all_ok(bool ok) const {
#ifdef HEATSOLVE_HAVE_MPI
    if (comm != MPI_COMM_NULL) {
      int local = ok ? 1 : 0, global = 0;
      if (MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        throw std::runtime_error("catalyst: MPI_Allreduce of the scripts' outcome failed");
      return global == 1;
    }
#endif
    return ok;
  }

  void setup(const Config& cfg) {
    // ParaView silences the log of ranks other than 0 (verbosity OFF), which its Python
    // logging takes for "debug" and floods stderr with; errors only, instead.
    if (vtkLogger::GetCurrentVerbosityCutoff() < vtkLogger::VERBOSITY_ERROR)
      vtkLogger::SetStderrVerbosity(vtkLogger::VERBOSITY_ERROR);
    step_word = cfg.problem == ProblemType::Heat ? "step" : "iteration";
    vtkNew<vtkStringArray> directory;
    directory->SetName("output_directory");
    directory->InsertNextValue(output_directory);
    user->AddArray(directory);
    // The field's name ("temperature" | "solution") and the problem ("heat" | "poisson": its
    // steps are time steps or iterations), for the scripts' arrays and annotations.
    vtkNew<vtkStringArray> field;
    field->SetName("field");
    field->InsertNextValue(grid.field());
    user->AddArray(field);
    vtkNew<vtkStringArray> problem;
    problem->SetName("problem");
    problem->InsertNextValue(grid.steady() ? "poisson" : "heat");  // (no call into heatsolve)
    user->AddArray(problem);
    // Absolute: Catalyst works in the output directory while the scripts run, and imports a
    // v2 script only then.
    // (A script that renders without $DISPLAY got a virtual X server from the adaptor:
    // io/catalyst_adaptor.hpp, check_catalyst_display.)
    for (const CatalystScript& s : cfg.catalyst) load(absolute_path(s.path));
  }

  // The message's tail after a failure some rank saw (`ok`: this rank's outcome). Only rank 0
  // reports the error, so a failure on another rank prints its Python error there.
  std::string python_error(bool ok, const OutputCapture& capture) const {
    if (ok) return " on another rank (its Python error is above)";
    const std::string text = indented(without_marker(capture.text()));
    if (rank() != 0) fmt::print(stderr, "[rank {}] Python error{}\n", rank(), text);
    return text;
  }

  int rank() const {
#ifdef HEATSOLVE_HAVE_MPI
    int r = 0;
    if (comm != MPI_COMM_NULL) MPI_Comm_rank(comm, &r);
    return r;
#else
    return 0;
#endif
  }

  // Loads a script: a v2 one ("# script-version: 2", what ParaView 5.11's File > Save
  // Catalyst State writes) or a v1 one (RequestDataDescription and DoCoProcessing).
  // vtkCPPythonScriptPipeline reports a v1 script that does not import only on the terminal
  // and would call a missing function without complaint: v1 scripts are checked here first,
  // in the interpreter Catalyst uses, and Python's error becomes the exception's message.
  // (A v2 script builds its pipeline when imported, so only Catalyst may import it.)
  void load(const std::string& path) {
    OutputCapture capture;
    const bool v2 = vtkCPPythonPipeline::DetectScriptVersion(path.c_str()) == 2;
    bool ok = true;
    if (!v2) {
      const std::string check = fmt::format(
          "import importlib.util as _hs_util\n"
          "_hs_spec = _hs_util.spec_from_file_location('heatsolve_catalyst_check', {0})\n"
          "_hs_module = _hs_util.module_from_spec(_hs_spec)\n"
          "_hs_spec.loader.exec_module(_hs_module)\n"
          "for _hs_name in ('RequestDataDescription', 'DoCoProcessing'):\n"
          "    if not callable(getattr(_hs_module, _hs_name, None)):\n"
          "        raise AttributeError('%s defines no function %s(datadescription)' % ({0}, "
          "_hs_name))\n"
          "del _hs_util, _hs_spec, _hs_module\n",
          python_literal(path));
      ok = vtkPythonInterpreter::RunSimpleString(check.c_str()) == 0;
    }
    vtkSmartPointer<vtkCPPythonPipeline> pipeline;
    if (ok) {
      vtkPythonInterpreter::RunSimpleString(kClearPythonError);
      pipeline = vtkCPPythonPipeline::CreateAndInitializePipeline(path.c_str(), 1);
      ok = pipeline != nullptr && !python_error_since_clear();
    }
    if (!all_ok(ok))
      throw std::runtime_error(fmt::format("output.catalyst: script '{}' cannot be loaded{}", path,
                                           python_error(ok, capture)));
    capture.pass_on();
    pipelines.push_back(pipeline);
    scripts.push_back(path);
  }

  template <typename T>
  void run(const CatalystSchedule& schedule, std::int64_t step, double time, bool last,
           const T* data, const Block& block) {
    const auto t0 = Clock::now();
    // The whole grid and this rank's piece, as point extents (cell data: cells + 1 points).
    int whole[6], piece[6];
    for (int a = 0; a < 3; ++a) {
      const bool flat = a == 2 && grid.dims == 2;
      whole[2 * a] = 0;
      whole[2 * a + 1] = flat ? 0 : grid.cells[a];
      piece[2 * a] = flat ? 0 : block.offset[a];
      piece[2 * a + 1] = flat ? 0 : block.offset[a] + block.count[a];
    }
    vtkNew<vtkImageData> image;
    image->SetExtent(piece);
    image->SetOrigin(grid.origin.data());
    image->SetSpacing(grid.spacing.data());
    using ArrayType = std::conditional_t<std::is_same_v<T, float>, vtkFloatArray, vtkDoubleArray>;
    vtkNew<ArrayType> values;
    values->SetName(grid.field());
    // No copy: the caller's host array outlives the call (save = 1: VTK must not free it).
    values->SetArray(const_cast<T*>(data), static_cast<vtkIdType>(block.size()), 1);
    image->GetCellData()->SetScalars(values);

    bool ran = false;
    for (std::size_t i = 0; i < pipelines.size(); ++i) {
      if (!schedule.due(i, step, last)) continue;
      // One pipeline at a time in the processor, so that each runs at its own cadence and a
      // failure names its script.
      processor->RemoveAllPipelines();
      processor->AddPipeline(pipelines[i]);
      vtkNew<vtkCPDataDescription> description;
      description->AddInput("input");
      // A steady solve's steps are iterations: its "time" is the iteration number.
      description->SetTimeData(grid.steady() ? double(step) : time, static_cast<vtkIdType>(step));
      description->SetUserData(user);
      OutputCapture capture;
      vtkPythonInterpreter::RunSimpleString(kClearPythonError);
      bool ok = true;
      if (processor->RequestDataDescription(description)) {
        vtkCPInputDataDescription* input = description->GetInputDescriptionByName("input");
        input->SetGrid(image);
        input->SetWholeExtent(whole);
        ok = processor->CoProcess(description) != 0;
      }
      ok = ok && !python_error_since_clear();
      if (!all_ok(ok))
        throw CatalystError(fmt::format("output.catalyst: script '{}' failed at {} {}{}",
                                        scripts[i], step_word, step, python_error(ok, capture)));
      capture.pass_on();
      ran = true;
      ++script_runs;
    }
    processor->RemoveAllPipelines();
    if (ran) {
      const double dt = seconds_since(t0);
      if (calls == 0) first_call_seconds = dt;  // builds the pipelines and views
      ++calls;
      seconds += dt;
    }
  }
};

ParaViewPipelines::ParaViewPipelines(const Config& cfg, const OutputGrid& grid_,
                                     const void* comm_) {
  grid = grid_;
  output_directory = absolute_path(cfg.output_directory);
  const auto t0 = Clock::now();
#ifdef HEATSOLVE_HAVE_MPI
  if (comm_) {
    comm = *static_cast<const MPI_Comm*>(comm_);
    vtkMPICommunicatorOpaqueComm opaque(&comm);
    processor->Initialize(opaque, output_directory.c_str());
  } else
#endif
  {
    (void)comm_;
    processor->Initialize(output_directory.c_str());
  }
  setup(cfg);
  setup_seconds = seconds_since(t0);
}

nlohmann::json ParaViewPipelines::report() const {
  nlohmann::json j;
  j["scripts"] = scripts;
  j["calls"] = calls;
  j["script_runs"] = script_runs;
  j["seconds"] = seconds;
  j["seconds_per_call"] = calls > 0 ? seconds / double(calls) : 0.0;
  j["first_call_seconds"] = first_call_seconds;
  j["setup_seconds"] = setup_seconds;
  return j;
}

}  // namespace

}  // namespace heatsolve

// Whether ParaView's render window class renders without an X server: creating the object
// opens no connection (that happens when it first renders).
extern "C" int heatsolve_catalyst_renders_offscreen() {
#ifdef HEATSOLVE_HAVE_RENDERING_OPENGL2
  vtkSmartPointer<vtkRenderWindow> window =
      vtkSmartPointer<vtkRenderWindow>::Take(vtkRenderWindow::New());
  if (!window) return 0;
  const std::string name = window->GetClassName();
  return name == "vtkEGLRenderWindow" || name == "vtkOSOpenGLRenderWindow" ? 1 : 0;
#else
  return 0;
#endif
}

extern "C" heatsolve::CatalystPipelines* heatsolve_catalyst_create(
    const heatsolve::Config* cfg, const heatsolve::OutputGrid* grid, const void* comm) {
  return new heatsolve::ParaViewPipelines(*cfg, *grid, comm);
}
