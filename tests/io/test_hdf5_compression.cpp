// output.compression in the HDF5 series: chunk shapes, deflate's lossless round trip bit for
// bit, ZFP within its tolerance, the files' attributes, the storage report, and read-back of a
// block (restart) from compressed data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/hdf5_writer.hpp"
#include "io/hdf5_zfp.hpp"

#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_handle.hpp"
#include "tests/temp_dir.hpp"
#endif

namespace fs = std::filesystem;
using namespace heatsolve;

namespace {

using Shape = std::vector<unsigned long long>;

TEST(Hdf5Chunk, WholeDatasetUpToAMillionValues) {
  EXPECT_EQ(series_chunk({64, 64, 64}), (Shape{64, 64, 64}));
  EXPECT_EQ(series_chunk({11, 14, 19}), (Shape{11, 14, 19}));
  EXPECT_EQ(series_chunk({1024, 1024}), (Shape{1024, 1024}));  // exactly 2^20
}

TEST(Hdf5Chunk, CutsTheSlowestAxesInMultiplesOfFour) {
  EXPECT_EQ(series_chunk({512, 512, 512}), (Shape{4, 512, 512}));
  EXPECT_EQ(series_chunk({8192, 8192}), (Shape{128, 8192}));
  EXPECT_EQ(series_chunk({90, 100, 130}), (Shape{48, 100, 130}));
  // The slowest axis down to 4, then the next one.
  EXPECT_EQ(series_chunk({8, 2048, 2048}), (Shape{4, 128, 2048}));
  for (const Shape& s :
       {Shape{1000, 999, 998}, Shape{3, 5000, 5000}, Shape{100000, 100}, Shape{7, 7, 50000000}}) {
    const Shape c = series_chunk(s);
    ASSERT_EQ(c.size(), s.size());
    unsigned long long n = 1;
    for (std::size_t a = 0; a < s.size(); ++a) {
      EXPECT_GE(c[a], 1u);
      EXPECT_LE(c[a], s[a]) << "axis " << a;
      n *= c[a];
    }
    // At most 2^20 values, unless every cut axis is already down to a ZFP block.
    if (n > (1u << 20)) {
      for (std::size_t a = 0; a + 1 < s.size(); ++a) EXPECT_LE(c[a], 4u);
    }
  }
}

#ifdef HEATSOLVE_HAVE_HDF5

using test_support::TempDir;

OutputGrid grid(int dims) {
  OutputGrid g;
  g.dims = dims;
  g.cells = dims == 3 ? std::array<int, 3>{37, 29, 23} : std::array<int, 3>{301, 203, 1};
  g.spacing = {1.0 / g.cells[0], 1.0 / g.cells[1], dims == 3 ? 1.0 / g.cells[2] : 1.0};
  return g;
}

// A smooth field with every value distinct (what compresses like a solution): a decaying sine
// mode plus a small ramp, step-dependent.
template <typename T>
std::vector<T> smooth_field(const OutputGrid& g, std::int64_t step) {
  std::vector<T> v(Block::whole(g).size());
  const double pi = std::acos(-1.0), decay = std::exp(-0.01 * double(step));
  std::size_t i = 0;
  for (int k = 0; k < g.cells[2]; ++k)
    for (int j = 0; j < g.cells[1]; ++j)
      for (int x = 0; x < g.cells[0]; ++x, ++i) {
        const double cx = (x + 0.5) / g.cells[0], cy = (j + 0.5) / g.cells[1];
        const double cz = g.dims == 3 ? (k + 0.5) / g.cells[2] : 0.5;
        v[i] = static_cast<T>(decay * std::sin(pi * cx) * std::sin(pi * cy) * std::sin(pi * cz) +
                              1e-3 * cx);
      }
  return v;
}

struct Written {
  std::string h5;
  Hdf5StorageReport storage;
};

template <typename T>
Written write_series(const std::string& dir, const OutputGrid& g, Precision p, const Compression& c,
                     const std::vector<std::int64_t>& steps) {
  auto w = make_hdf5_writer(dir, "run", g, p, c);
  for (std::int64_t s : steps) {
    const std::vector<T> v = smooth_field<T>(g, s);
    w->write(s, 0.01 * double(s), v.data(), Block::whole(g));
  }
  w->finalize();
  Written out{dir + "/run.h5", {}};
  out.storage = hdf5_storage_report(out.h5);
  return out;
}

std::string string_attribute(const std::string& file, const char* name) {
  h5::File f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  h5::Attribute a(H5Aopen(f.get(), name, H5P_DEFAULT), "open attribute");
  h5::Datatype t(H5Aget_type(a.get()), "type");
  std::string s(H5Tget_size(t.get()), '\0');
  h5::check(H5Aread(a.get(), t.get(), s.data()), "read");
  return s.substr(0, s.find('\0'));
}

template <typename T>
T number_attribute(const std::string& file, const char* name, hid_t type) {
  h5::File f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  h5::Attribute a(H5Aopen(f.get(), name, H5P_DEFAULT), "open attribute");
  T v{};
  h5::check(H5Aread(a.get(), type, &v), "read");
  return v;
}

// The filters on a dataset, as HDF5 lists them.
std::vector<int> filters(const std::string& file, const std::string& dataset) {
  h5::File f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  h5::Dataset d(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT), "open dataset");
  h5::PropList dcpl(H5Dget_create_plist(d.get()), "dcpl");
  std::vector<int> out;
  for (int i = 0; i < H5Pget_nfilters(dcpl.get()); ++i) {
    unsigned flags = 0, cd[8];
    std::size_t n = 8;
    out.push_back(
        int(H5Pget_filter2(dcpl.get(), unsigned(i), &flags, &n, cd, 0, nullptr, nullptr)));
  }
  return out;
}

template <typename T>
void check_deflate_lossless(int dims) {
  const OutputGrid g = grid(dims);
  const Precision p = sizeof(T) == 4 ? Precision::Float : Precision::Double;
  TempDir dir;
  const std::vector<std::int64_t> steps{0, 5, 10};
  const Written plain = write_series<T>(dir.str() + "/plain", g, p, {}, steps);
  Compression c;
  c.type = CompressionType::Deflate;
  c.level = 6;
  const Written packed = write_series<T>(dir.str() + "/packed", g, p, c, steps);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Hdf5StepData a = read_hdf5_step(plain.h5, std::int64_t(k));
    const Hdf5StepData b = read_hdf5_step(packed.h5, std::int64_t(k));
    ASSERT_EQ(a.data.size(), b.data.size());
    const std::vector<T> expect = smooth_field<T>(g, steps[k]);
    for (std::size_t i = 0; i < expect.size(); ++i) {  // bit for bit, as written
      ASSERT_EQ(b.data[i], double(expect[i])) << "step " << steps[k] << " value " << i;
      ASSERT_EQ(std::signbit(b.data[i]), std::signbit(a.data[i]));
    }
  }
  EXPECT_EQ(plain.storage.datasets, 3);
  EXPECT_EQ(packed.storage.datasets, 3);
  EXPECT_EQ(plain.storage.data_bytes, 3 * Block::whole(g).size() * sizeof(T));
  // Uncompressed: the values as computed plus Fletcher32's 4 bytes per chunk.
  EXPECT_GE(plain.storage.stored_bytes, plain.storage.data_bytes);
  EXPECT_LE(plain.storage.stored_bytes, plain.storage.data_bytes + 3 * 4 * 64);
  EXPECT_EQ(packed.storage.data_bytes, plain.storage.data_bytes);
  EXPECT_LT(packed.storage.stored_bytes, plain.storage.stored_bytes);
  EXPECT_GT(packed.storage.ratio(), 1.2) << packed.storage.stored_bytes;
  std::printf("deflate %dD %s: %llu -> %llu bytes (%.2fx)\n", dims,
              sizeof(T) == 4 ? "float" : "double", (unsigned long long)plain.storage.data_bytes,
              (unsigned long long)packed.storage.stored_bytes, packed.storage.ratio());
  EXPECT_LT(fs::file_size(packed.h5), fs::file_size(plain.h5));
  EXPECT_EQ(string_attribute(packed.h5, "compression"), "deflate");
  EXPECT_EQ(number_attribute<int>(packed.h5, "compression_level", H5T_NATIVE_INT), 6);
  EXPECT_EQ(number_attribute<int>(packed.h5, "compression_lossy", H5T_NATIVE_INT), 0);
  EXPECT_EQ(string_attribute(plain.h5, "compression"), "none");
  // The checksum last, over the stored bytes.
  EXPECT_EQ(filters(packed.h5, "/steps/00000005/temperature"),
            (std::vector<int>{H5Z_FILTER_SHUFFLE, H5Z_FILTER_DEFLATE, H5Z_FILTER_FLETCHER32}));
  EXPECT_EQ(filters(plain.h5, "/steps/00000005/temperature"),
            (std::vector<int>{H5Z_FILTER_FLETCHER32}));
}

TEST(Hdf5Compression, DeflateIsLosslessFloat3D) {
  check_deflate_lossless<float>(3);
}
TEST(Hdf5Compression, DeflateIsLosslessDouble3D) {
  check_deflate_lossless<double>(3);
}
TEST(Hdf5Compression, DeflateIsLosslessDouble2D) {
  check_deflate_lossless<double>(2);
}

template <typename T>
void check_zfp_bound(int dims, double tolerance) {
  if (!h5zfp::built_in()) GTEST_SKIP() << "built without the ZFP library";
  const OutputGrid g = grid(dims);
  const Precision p = sizeof(T) == 4 ? Precision::Float : Precision::Double;
  TempDir dir;
  Compression c;
  c.type = CompressionType::Zfp;
  c.tolerance = tolerance;
  const std::vector<std::int64_t> steps{0, 7};
  const Written w = write_series<T>(dir.str(), g, p, c, steps);
  double worst = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Hdf5StepData s = read_hdf5_step(w.h5, std::int64_t(k));
    const std::vector<T> exact = smooth_field<T>(g, steps[k]);
    ASSERT_EQ(s.data.size(), exact.size());
    std::size_t changed = 0;
    for (std::size_t i = 0; i < exact.size(); ++i) {
      const double e = std::abs(s.data[i] - double(exact[i]));
      worst = std::max(worst, e);
      changed += e > 0;
      ASSERT_LE(e, tolerance) << "step " << steps[k] << " value " << i;
    }
    EXPECT_GT(changed, 0u) << "lossy mode stored every value exactly: not compressed?";
  }
  EXPECT_GT(worst, tolerance * 1e-4);  // the error is really there, and bounded
  const std::uint64_t raw = steps.size() * Block::whole(g).size() * sizeof(T);
  EXPECT_EQ(w.storage.data_bytes, raw);
  EXPECT_LT(w.storage.stored_bytes * 2, raw) << "less than 2x smaller";
  std::printf("zfp %dD %s tolerance %g: %llu -> %llu bytes (%.2fx), max error %.3g\n", dims,
              sizeof(T) == 4 ? "float" : "double", tolerance, (unsigned long long)raw,
              (unsigned long long)w.storage.stored_bytes, w.storage.ratio(), worst);
  EXPECT_EQ(string_attribute(w.h5, "compression"), "zfp");
  EXPECT_EQ(number_attribute<int>(w.h5, "compression_lossy", H5T_NATIVE_INT), 1);
  EXPECT_EQ(number_attribute<double>(w.h5, "compression_tolerance", H5T_NATIVE_DOUBLE), tolerance);
  EXPECT_NE(string_attribute(w.h5, "compression_note").find("within compression_tolerance"),
            std::string::npos);
  EXPECT_EQ(filters(w.h5, "/steps/00000007/temperature"),
            (std::vector<int>{h5zfp::kFilterId, H5Z_FILTER_FLETCHER32}));
}

TEST(Hdf5Compression, ZfpWithinToleranceDouble3D) {
  check_zfp_bound<double>(3, 1e-6);
}
TEST(Hdf5Compression, ZfpWithinToleranceFloat3D) {
  check_zfp_bound<float>(3, 1e-4);
}
TEST(Hdf5Compression, ZfpWithinToleranceDouble2D) {
  check_zfp_bound<double>(2, 1e-9);
}

// A restart reads its block of the previous series: through the filters, block by block.
TEST(Hdf5Compression, BlocksReadBackThroughTheFilters) {
  const OutputGrid g = grid(3);
  for (const CompressionType type : {CompressionType::Deflate, CompressionType::Zfp}) {
    if (type == CompressionType::Zfp && !h5zfp::built_in()) continue;
    TempDir dir;
    Compression c;
    c.type = type;
    c.tolerance = 1e-7;
    const Written w = write_series<double>(dir.str(), g, Precision::Double, c, {3});
    const Hdf5StepData all = read_hdf5_step(w.h5);
    Block b;
    b.offset = {5, 7, 11};
    b.count = {20, 13, 9};
    const Hdf5StepData part = read_hdf5_step(w.h5, kLastStep, &b);
    ASSERT_EQ(part.data.size(), b.size());
    std::size_t i = 0;
    for (int z = 0; z < b.count[2]; ++z)
      for (int y = 0; y < b.count[1]; ++y)
        for (int x = 0; x < b.count[0]; ++x, ++i) {
          const std::size_t at =
              std::size_t(x + b.offset[0]) +
              std::size_t(g.cells[0]) * (std::size_t(y + b.offset[1]) +
                                         std::size_t(g.cells[1]) * std::size_t(z + b.offset[2]));
          ASSERT_EQ(part.data[i], all.data[at]) << to_string(type);
        }
  }
}

TEST(Hdf5Compression, ThisBuildSaysWhatItCan) {
  EXPECT_TRUE(hdf5_compression_available(CompressionType::None));
  EXPECT_TRUE(hdf5_compression_available(CompressionType::Deflate));
#ifdef HEATSOLVE_HAVE_ZFP
  EXPECT_TRUE(hdf5_compression_available(CompressionType::Zfp));
  EXPECT_TRUE(h5zfp::built_in());
#else
  EXPECT_FALSE(hdf5_compression_available(CompressionType::Zfp));
  TempDir dir;
  Compression c;
  c.type = CompressionType::Zfp;
  c.tolerance = 1e-3;
  EXPECT_THROW(make_hdf5_writer(dir.str(), "run", grid(3), Precision::Double, c),
               std::runtime_error);
#endif
}

#endif  // HEATSOLVE_HAVE_HDF5

}  // namespace
