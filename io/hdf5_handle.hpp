// RAII ownership of HDF5 identifiers (hid_t) and checked calls that turn HDF5 failures into
// std::runtime_error. Internal to the io library: include only under HEATSOLVE_HAVE_HDF5.
#pragma once

#ifdef HEATSOLVE_HAVE_HDF5

#include <hdf5.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace heatsolve::h5 {

// Turns off HDF5's automatic printing of its error stack (errors become exceptions instead).
inline void silence_errors() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// One line naming the cause of the failure on HDF5's current error stack ("" if none), then
// clears the stack. A failed system call (the sec2 driver's "file write failed: time = ...,
// errno = 28, error message = 'No space left on device', ...", which spans two lines) is
// reported by its errno alone: "No space left on device". Otherwise the innermost message,
// newlines and tabs replaced by spaces.
inline std::string last_error() {
  struct Collect {
    std::string innermost;
    int err = 0;
    static herr_t walk(unsigned n, const H5E_error2_t* e, void* out) {
      auto* c = static_cast<Collect*>(out);
      if (e == nullptr || e->desc == nullptr) return 0;
      const std::string desc = e->desc;
      if (n == 0) c->innermost = std::string(e->func_name ? e->func_name : "") + ": " + desc;
      const std::size_t at = desc.find("errno = ");
      if (c->err == 0 && at != std::string::npos) c->err = std::atoi(desc.c_str() + at + 8);
      return 0;
    }
  } collect;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, &Collect::walk, &collect);
  H5Eclear2(H5E_DEFAULT);
  if (collect.err > 0) return std::strerror(collect.err);
  std::string line = collect.innermost;
  for (char& ch : line)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// An identifier whose close failed stays registered: HDF5 1.10's close of a file whose flush
// failed leaves its metadata cache inconsistent ("slist already enabled?"), and the library's
// exit-time clean-up (atexit, or MPI_Finalize under MPI) then crashes closing it again
// (SIGSEGV in H5F__close_cb). Handles record such a leak here; main() then leaves without
// that clean-up (see hdf5_objects_leaked() in io/hdf5_storage.hpp).
inline bool& leaked_flag() {
  static bool leaked = false;
  return leaked;
}
inline void note_failed_close(hid_t id) {
  if (H5Iis_valid(id) > 0) leaked_flag() = true;
  H5Eclear2(H5E_DEFAULT);
}

[[noreturn]] inline void fail(const std::string& what) {
  std::string detail = last_error();
  throw std::runtime_error("HDF5: " + what + " failed" +
                           (detail.empty() ? std::string() : " (" + detail + ")"));
}

// Throws naming `what` when an HDF5 call returned a negative status.
inline herr_t check(herr_t status, const std::string& what) {
  if (status < 0) fail(what);
  return status;
}

// Owns one identifier and releases it with `Close` (H5Fclose, H5Dclose, ...). Move-only.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  // Takes ownership of `id`; throws naming `what` if the call that produced it failed.
  Handle(hid_t id, const std::string& what) : id_(id) {
    if (id_ < 0) fail(what);
  }
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Releases without checking (destructors, error paths).
  void reset() noexcept {
    if (id_ >= 0 && Close(id_) < 0) note_failed_close(id_);
    id_ = H5I_INVALID_HID;
  }
  // Releases and throws naming `what` on failure (for closes whose success matters, files).
  void close(const std::string& what) {
    hid_t id = std::exchange(id_, H5I_INVALID_HID);
    if (id >= 0 && Close(id) < 0) {
      const std::string detail = last_error();
      note_failed_close(id);
      throw std::runtime_error("HDF5: " + what + " failed" +
                               (detail.empty() ? std::string() : " (" + detail + ")"));
    }
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Attribute = Handle<H5Aclose>;
using PropList = Handle<H5Pclose>;
using Datatype = Handle<H5Tclose>;

// The value of the existing attribute `name` of `obj` where it is a fixed-length string (what
// the writers store; up to its first NUL), nullopt where it is of another type (a number, a
// variable-length string). Throws naming `where` where HDF5 cannot open or read it.
inline std::optional<std::string> fixed_string_attribute(hid_t obj, const char* name,
                                                         const std::string& where) {
  const std::string what = std::string("attribute '") + name + "' of " + where;
  Attribute attr(H5Aopen(obj, name, H5P_DEFAULT), "open " + what);
  Datatype type(H5Aget_type(attr.get()), "type of " + what);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
    return std::nullopt;
  const std::size_t size = H5Tget_size(type.get());
  Datatype mem(H5Tcopy(H5T_C_S1), "string type");
  check(H5Tset_size(mem.get(), size + 1), "string size");
  std::string out(size + 1, '\0');
  check(H5Aread(attr.get(), mem.get(), out.data()), "read " + what);
  out.resize(std::strlen(out.c_str()));
  return out;
}

}  // namespace heatsolve::h5

#endif  // HEATSOLVE_HAVE_HDF5
