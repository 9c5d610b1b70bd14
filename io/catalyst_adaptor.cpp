// The ParaView-free side of in-situ output: the schedule, and loading the module that holds
// the ParaView side (io/catalyst/catalyst_module.hpp says why it is a module).
#include "io/catalyst_adaptor.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>

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
void* catalyst_module() {
  static void* module = [] {
    const std::string path = catalyst_module_path();
    if (path.empty())
      throw std::runtime_error(
          fmt::format("output.catalyst: the Catalyst module {} is neither next to heatsolve nor in "
                      "../lib/heatsolve (set HEATSOLVE_CATALYST_MODULE to its path)",
                      kCatalystModuleName));
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle)
      throw std::runtime_error(
          fmt::format("output.catalyst: cannot load the Catalyst module: {}", dlerror()));
    return handle;
  }();
  return module;
}

CatalystCreateFunction load_catalyst_module() {
  static CatalystCreateFunction create = [] {
    auto* entry =
        reinterpret_cast<CatalystCreateFunction>(dlsym(catalyst_module(), kCatalystCreateSymbol));
    if (!entry)
      throw std::runtime_error(fmt::format("output.catalyst: the Catalyst module has no {}: {}",
                                           kCatalystCreateSymbol, dlerror()));
    return entry;
  }();
  return create;
}

// ---- Rendering without a display ------------------------------------------------------------

bool display_set() {
  const char* display = std::getenv("DISPLAY");
  return display != nullptr && *display != '\0';
}

// Whether a script renders: it names one of ParaView's rendering calls or an image extractor.
bool script_renders(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  static const std::regex renders(
      R"(SaveScreenshot|SaveAnimation|CreateView|CreateRenderView|GetActiveView|\bRender\s*\(|['"](PNG|JPG|JPEG|TIF|TIFF|BMP)['"])");
  return std::regex_search(text, renders);
}

bool any_script_renders(const Config& cfg) {
  for (const CatalystScript& s : cfg.catalyst)
    if (script_renders(s.path)) return true;
  return false;
}

// The virtual X server: $HEATSOLVE_XVFB, else Xvfb on the PATH; "" when there is none.
std::string xvfb_path() {
  if (const char* env = std::getenv("HEATSOLVE_XVFB"); env && *env)
    return ::access(env, X_OK) == 0 ? env : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate =
        (end > start ? dirs.substr(start, end - start) : std::string(".")) + "/Xvfb";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// Whether this ParaView renders off screen (EGL or OSMesa render windows need no X server):
// asked of the Catalyst module, which knows ParaView's render window class.
bool paraview_renders_offscreen() {
#ifdef HEATSOLVE_HAVE_CATALYST
  if (const char* env = std::getenv("HEATSOLVE_CATALYST_OFFSCREEN"); env && *env)
    return std::string(env) != "0";
  try {
    auto* probe = reinterpret_cast<CatalystOffscreenFunction>(
        dlsym(catalyst_module(), kCatalystOffscreenSymbol));
    return probe != nullptr && probe() != 0;
  } catch (const std::exception&) {
    return false;  // the module does not load: the adaptor says so later
  }
#else
  return false;
#endif
}

// Whether the X server of local display `display` (a number) completes a client's connection
// set-up: the X11 protocol's first exchange, without authorisation data.
bool x_server_accepts(const std::string& display) {
  const std::string path = "/tmp/.X11-unix/X" + display;
  for (const bool abstract : {true, false}) {  // Linux servers listen on both
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::size_t at = abstract ? 1 : 0;
    std::memcpy(address.sun_path + at, path.c_str(), path.size());
    const auto length = socklen_t(offsetof(sockaddr_un, sun_path) + at + path.size());
    bool accepted = false;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0) {
      // Byte order 'l', protocol 11.0, no authorisation; the reply starts with 1 = success.
      const unsigned char setup[12] = {'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0};
      pollfd p{fd, POLLIN, 0};
      unsigned char status = 0;
      accepted = ::write(fd, setup, sizeof setup) == ssize_t(sizeof setup) &&
                 ::poll(&p, 1, 5000) == 1 && ::read(fd, &status, 1) == 1 && status == 1;
    }
    ::close(fd);
    if (accepted) return true;
  }
  return false;
}

// Starts the private X server (once per process) and points $DISPLAY at it; "" on success,
// else why it failed. The server is in its own session (a terminal's Ctrl-C does not reach
// it) and gets SIGTERM when heatsolve ends (PR_SET_PDEATHSIG), however heatsolve ends: it
// stays up while ParaView's render windows exist, which may be until Python's finalization.
std::string start_virtual_display() {
  static std::string started;  // the display, once up
  if (!started.empty()) return "";
  const std::string xvfb = xvfb_path();
  if (xvfb.empty()) return "no Xvfb found (set HEATSOLVE_XVFB to its path)";
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fmt::format("pipe: {}", std::strerror(errno));
  const pid_t parent = ::getpid();
  // Everything the child needs is prepared before fork (no allocation after it).
  // -noreset: an X server resets when its last client disconnects, and connections made during
  // the reset fail (VTK: "bad X server connection", SIGABRT); ParaView connects more than once.
  const char* argv[] = {xvfb.c_str(),   "-displayfd", "3",   "-screen",  "0",
                        "1280x1024x24", "-nolisten",  "tcp", "-noreset", nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return fmt::format("fork: {}", std::strerror(errno));
  }
  if (pid == 0) {
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGXFSZ, SIG_DFL);
    if (::dup2(fds[1], 3) < 0) ::_exit(127);  // dup2 clears FD_CLOEXEC on fd 3
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(fds[1]);
  // Xvfb writes the display number once it accepts connections.
  std::string number;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (number.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) <= 0) break;
    char buf[32];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    number.append(buf, std::size_t(n));
  }
  ::close(fds[0]);
  if (number.find('\n') == std::string::npos || number.empty() ||
      !std::isdigit(static_cast<unsigned char>(number[0]))) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return fmt::format("'{}' did not start (run '{} -displayfd 1' to see why)", xvfb, xvfb);
  }
  const std::string display = number.substr(0, number.find('\n'));
  // It says so once it listens; it is ready once it answers a client's connection set-up.
  while (!x_server_accepts(display)) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid || std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return fmt::format("'{}' started on display :{} but accepts no connection", xvfb, display);
    }
    ::usleep(20000);
  }
  started = ":" + display;
  ::setenv("DISPLAY", started.c_str(), 1);
  return "";
}

// "" when the scripts can render here (or need not), else why not.
std::string display_problem(const Config& cfg) {
  if (cfg.catalyst.empty() || display_set() || !any_script_renders(cfg)) return "";
  if (paraview_renders_offscreen()) return "";
  if (!xvfb_path().empty()) return "";
  return "output.catalyst: a script renders (it saves screenshots or images), $DISPLAY is not "
         "set, this ParaView renders through an X server only, and no virtual X server (Xvfb) "
         "is installed: install Xvfb (apt-get install xvfb; or set HEATSOLVE_XVFB to its "
         "path), run with a display, or use scripts that do not render (e.g. "
         "postproc/catalyst/line_probe.py)";
}

// Starts the virtual display when the scripts need one; "" or why it failed.
std::string prepare_display(const Config& cfg) {
  if (cfg.catalyst.empty() || display_set() || !any_script_renders(cfg)) return "";
  if (paraview_renders_offscreen()) return "";
  const std::string why = start_virtual_display();
  return why.empty() ? ""
                     : "output.catalyst: cannot start a virtual X server for rendering: " + why;
}

CatalystSchedule schedule_of(const Config& cfg) {
  std::vector<std::int64_t> every;
  for (const CatalystScript& s : cfg.catalyst) every.push_back(s.every);
  return CatalystSchedule(std::move(every));
}

}  // namespace

void check_catalyst_display(const Config& cfg) {
  const std::string why = display_problem(cfg);
  if (!why.empty()) throw CatalystUnavailable(why);
}

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
  if (const std::string why = prepare_display(cfg); !why.empty()) throw std::runtime_error(why);
  impl_->pipelines = make_pipelines(cfg, grid, nullptr);
}

#ifdef HEATSOLVE_HAVE_MPI
CatalystAdaptor::CatalystAdaptor(const Config& cfg, const OutputGrid& grid, MPI_Comm comm)
    : impl_(std::make_unique<Impl>()), schedule_(schedule_of(cfg)) {
  // Every rank renders its piece: each starts its own display; all stop if one cannot.
  const std::string why = prepare_display(cfg);
  int ok = why.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (all == 0)
    throw std::runtime_error(why.empty() ? "output.catalyst: another rank cannot start a "
                                           "virtual X server for rendering"
                                         : why);
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
