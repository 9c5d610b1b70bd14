#include "solvers/parallel/margins.hpp"

#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace heatsolve {

namespace {

// The live fields with margins, by data(): the smoother asks whether the pointers it is given
// have them before it sweeps into their margins.
class MarginRegistry {
 public:
  static MarginRegistry& instance() {
    static MarginRegistry r;
    return r;
  }
  void add(const void* p, const Margins& m) {
    std::lock_guard<std::mutex> lock(mutex_);
    map_[p] = m;
  }
  void remove(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    map_.erase(p);
  }
  Margins find(const void* p) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = map_.find(p);
    return it == map_.end() ? Margins{} : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const void*, Margins> map_;
};

template <typename T>
class MarginedArray final : public Array<T> {
 public:
  MarginedArray(Backend<T>& backend, std::size_t n, const Margins& m)
      : backend_(backend),
        whole_(backend.allocate(m.before + n + m.after)),
        offset_(m.before),
        n_(n) {
    MarginRegistry::instance().add(data(), m);
  }
  ~MarginedArray() override { MarginRegistry::instance().remove(data()); }
  MarginedArray(const MarginedArray&) = delete;
  MarginedArray& operator=(const MarginedArray&) = delete;

  T* data() override { return whole_->data() + offset_; }
  const T* data() const override { return whole_->data() + offset_; }
  std::size_t size() const override { return n_; }
  void copy_from_host(const T* src) override { copy(data(), src); }
  void copy_to_host(T* dst) const override { copy(dst, data()); }
  void copy_from(const Array<T>& other) override {
    if (other.size() != n_) throw std::invalid_argument("MarginedArray::copy_from: size mismatch");
    copy(data(), other.data());
  }
  void set_zero() override { whole_->set_zero(); }

 private:
  // Synchronous, as the backends' own arrays copy (the backend's copy takes host memory too).
  void copy(T* dst, const T* src) const {
    backend_.copy_values(dst, src, n_);
    backend_.synchronize();
  }

  Backend<T>& backend_;
  std::unique_ptr<Array<T>> whole_;
  std::size_t offset_, n_;
};

}  // namespace

bool stream_margins(const DeepHaloGeometry& geometry, Margins* out) {
  const GridDesc& b = geometry.block;
  const int stream = b.dims == 3 ? 2 : 1;
  for (int a = 0; a < 3; ++a)
    if (a != stream && (geometry.margin_lo[a] != 0 || geometry.margin_hi[a] != 0)) return false;
  const std::size_t plane = std::size_t(b.dims == 3 ? b.stride_z() : b.stride_y());
  out->before = plane * std::size_t(geometry.margin_lo[stream]);
  out->after = plane * std::size_t(geometry.margin_hi[stream]);
  return out->any();
}

Margins stream_margins(const Domain& domain, int depth) {
  if (depth < 1 || depth > deepest_margin(domain)) return {};
  Margins m;
  return stream_margins(deep_halo_geometry(domain, depth), &m) ? m : Margins{};
}

template <typename T>
std::unique_ptr<Array<T>> allocate_with_margins(Backend<T>& backend, std::size_t n,
                                                const Margins& margins) {
  if (!margins.any()) return backend.allocate(n);
  return std::make_unique<MarginedArray<T>>(backend, n, margins);
}

Margins margins_of(const void* p) {
  return p ? MarginRegistry::instance().find(p) : Margins{};
}

template std::unique_ptr<Array<float>> allocate_with_margins(Backend<float>&, std::size_t,
                                                             const Margins&);
template std::unique_ptr<Array<double>> allocate_with_margins(Backend<double>&, std::size_t,
                                                              const Margins&);

}  // namespace heatsolve
