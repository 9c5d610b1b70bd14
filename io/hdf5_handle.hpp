// RAII ownership of HDF5 identifiers (hid_t) and checked calls that turn HDF5 failures into
// std::runtime_error. Internal to the io library: include only under HEATSOLVE_HAVE_HDF5.
#pragma once

#ifdef HEATSOLVE_HAVE_HDF5

#include <hdf5.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace heatsolve::h5 {

// Turns off HDF5's automatic printing of its error stack (errors become exceptions instead).
inline void silence_errors() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// The most specific message on HDF5's current error stack ("" if none), then clears it.
inline std::string last_error() {
  struct Collect {
    static herr_t walk(unsigned n, const H5E_error2_t* err, void* out) {
      if (n == 0 && err != nullptr && err->desc != nullptr) {
        *static_cast<std::string*>(out) =
            std::string(err->func_name ? err->func_name : "") + ": " + err->desc;
      }
      return 0;
    }
  };
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, &Collect::walk, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
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
    if (id_ >= 0) Close(id_);
    id_ = H5I_INVALID_HID;
  }
  // Releases and throws naming `what` on failure (for closes whose success matters, files).
  void close(const std::string& what) {
    hid_t id = std::exchange(id_, H5I_INVALID_HID);
    if (id >= 0) check(Close(id), what);
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

}  // namespace heatsolve::h5

#endif  // HEATSOLVE_HAVE_HDF5
