#include "io/hdf5_zfp.hpp"

#include <stdexcept>

#if defined(HEATSOLVE_HAVE_HDF5) && defined(HEATSOLVE_HAVE_ZFP)

#include <dlfcn.h>
#include <zfp.h>

#include <cstring>
#include <mutex>
#include <string>

namespace heatsolve::h5zfp {

namespace {

// The parameters as an application hands them to H5Pset_filter (H5Z-ZFP's "generic
// interface"): {mode, unused, tolerance as two words of a double}. set_local() replaces them
// with what the file keeps: {version word, ZFP's full header}.
constexpr unsigned kModeAccuracy = 3;
constexpr std::size_t kRequestWords = 4;
// At most 1 version word + 5 header words (ZFP's full header: 32 bits of magic, 52 of field
// metadata, 12 or 76 of mode): H5Z-ZFP's H5Z_ZFP_CD_NELMTS_MAX.
constexpr std::size_t kMaxWords = 6;

// Word 0 of the stored parameters: ZFP library version (4 hex digits), ZFP codec, and the
// H5Z-ZFP format version written (1.1.0, the one Debian 12's plugin reads and writes).
constexpr unsigned kZfpVersionNo = (ZFP_VERSION_MAJOR << 12) | (ZFP_VERSION_MINOR << 8) |
                                   (ZFP_VERSION_PATCH << 4) | ZFP_VERSION_TWEAK;
constexpr unsigned kFormatVersionNo = 0x0110;
constexpr unsigned kVersionWord = (kZfpVersionNo << 16) | (ZFP_CODEC << 12) | kFormatVersionNo;

// The ZFP codec a file's version word names (H5Z-ZFP's rule: ZFP before 0.5 wrote codec 4,
// up to 1.0 codec 5, later ones say it themselves; 3-digit versions predate 1.0).
unsigned writer_codec(unsigned word) {
  unsigned version = (word >> 16) & 0xFFFF;
  if (version < 0x0100) version <<= 4;
  if (version < 0x0500) return 4;
  if (version <= 0x1000) return 5;
  return (word >> 12) & 0xF;
}

// Every libzfp call goes through this table. libzfp's bit stream functions have generic names
// (stream_open, stream_size, stream_flush, ...) that other libraries export too: CFITSIO, which
// ParaView loads, takes over libzfp's *own* calls to them there (ELF interposition) and the
// decompression crashes. So the plugin module (HEATSOLVE_ZFP_DEEPBIND) opens libzfp itself
// with RTLD_DEEPBIND, which binds libzfp's calls inside libzfp, and calls it through dlsym;
// heatsolve, which links libzfp at start-up ahead of anything it loads later, calls directly
// (and stays free of RTLD_DEEPBIND, which the sanitizers refuse).
#define HEATSOLVE_ZFP_CALLS(X) \
  X(stream_open)               \
  X(stream_close)              \
  X(zfp_stream_open)           \
  X(zfp_stream_close)          \
  X(zfp_stream_set_accuracy)   \
  X(zfp_stream_set_bit_stream) \
  X(zfp_stream_rewind)         \
  X(zfp_stream_flush)          \
  X(zfp_stream_maximum_size)   \
  X(zfp_write_header)          \
  X(zfp_read_header)           \
  X(zfp_compress)              \
  X(zfp_decompress)            \
  X(zfp_field_alloc)           \
  X(zfp_field_1d)              \
  X(zfp_field_2d)              \
  X(zfp_field_3d)              \
  X(zfp_field_4d)              \
  X(zfp_field_free)            \
  X(zfp_field_type)            \
  X(zfp_field_size)            \
  X(zfp_field_set_pointer)

struct ZfpCalls {
#define HEATSOLVE_ZFP_MEMBER(name) decltype(&::name) name = nullptr;
  HEATSOLVE_ZFP_CALLS(HEATSOLVE_ZFP_MEMBER)
#undef HEATSOLVE_ZFP_MEMBER
  std::string problem;  // why the table is empty ("" when every call is there)
};

const ZfpCalls& zfp() {
  static const ZfpCalls calls = [] {
    ZfpCalls c;
#ifdef HEATSOLVE_ZFP_DEEPBIND
    void* lib = dlopen(HEATSOLVE_ZFP_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);  // kept
    if (!lib) {
      const char* why = dlerror();
      c.problem = std::string("ZFP: cannot load " HEATSOLVE_ZFP_SONAME ": ") + (why ? why : "?");
      return c;
    }
#define HEATSOLVE_ZFP_LOOKUP(name)                                \
  c.name = reinterpret_cast<decltype(c.name)>(dlsym(lib, #name)); \
  if (!c.name) c.problem = "ZFP: " HEATSOLVE_ZFP_SONAME " lacks " #name;
    HEATSOLVE_ZFP_CALLS(HEATSOLVE_ZFP_LOOKUP)
#undef HEATSOLVE_ZFP_LOOKUP
#else
#define HEATSOLVE_ZFP_DIRECT(name) c.name = &::name;
    HEATSOLVE_ZFP_CALLS(HEATSOLVE_ZFP_DIRECT)
#undef HEATSOLVE_ZFP_DIRECT
#endif
    return c;
  }();
  return calls;
}

void push_error(const char* func, hid_t minor, const char* message) {
  H5Epush2(H5E_DEFAULT, __FILE__, func, __LINE__, H5E_ERR_CLS, H5E_PLINE, minor, "%s", message);
}

// Chunk dimensions larger than 1, fastest first (ZFP's x, y, z, w order).
int used_dims(hid_t space, std::size_t out[4]) {
  hsize_t dims[H5S_MAX_RANK];
  const int rank = H5Sget_simple_extent_dims(space, dims, nullptr);
  if (rank < 0) return -1;
  int used = 0;
  for (int a = rank - 1; a >= 0; --a) {
    if (dims[a] <= 1) continue;
    if (used == 4) return 5;
    out[used++] = static_cast<std::size_t>(dims[a]);
  }
  return used;
}

zfp_field* make_field(zfp_type type, int dims, const std::size_t n[4]) {
  const ZfpCalls& z = zfp();
  switch (dims) {
    case 1:
      return z.zfp_field_1d(nullptr, type, n[0]);
    case 2:
      return z.zfp_field_2d(nullptr, type, n[0], n[1]);
    case 3:
      return z.zfp_field_3d(nullptr, type, n[0], n[1], n[2]);
    case 4:
      return z.zfp_field_4d(nullptr, type, n[0], n[1], n[2], n[3]);
    default:
      return nullptr;
  }
}

htri_t can_apply(hid_t /*dcpl*/, hid_t type, hid_t chunk_space) {
  if (!zfp().problem.empty()) {
    push_error("heatsolve_zfp_can_apply", H5E_CANTINIT, zfp().problem.c_str());
    return -1;
  }
  if (H5Tget_class(type) != H5T_FLOAT) {
    push_error("heatsolve_zfp_can_apply", H5E_BADTYPE, "ZFP: needs a floating-point datatype");
    return 0;
  }
  const std::size_t size = H5Tget_size(type);
  if (size != 4 && size != 8) {
    push_error("heatsolve_zfp_can_apply", H5E_BADTYPE, "ZFP: needs 4- or 8-byte values");
    return 0;
  }
  std::size_t n[4];
  const int used = used_dims(chunk_space, n);
  if (used < 1 || used > 4) {
    push_error("heatsolve_zfp_can_apply", H5E_BADVALUE,
               "ZFP: a chunk needs 1 to 4 dimensions longer than 1");
    return 0;
  }
  return 1;
}

herr_t set_local(hid_t dcpl, hid_t type, hid_t chunk_space) {
  const ZfpCalls& z = zfp();
  unsigned flags = 0;
  std::size_t n_request = kMaxWords;
  unsigned request[kMaxWords] = {};
  if (H5Pget_filter_by_id2(dcpl, kFilterId, &flags, &n_request, request, 0, nullptr, nullptr) < 0)
    return -1;
  if (n_request < kRequestWords || request[0] != kModeAccuracy) {
    push_error("heatsolve_zfp_set_local", H5E_BADVALUE,
               "ZFP: heatsolve writes the fixed-accuracy mode only (cd_values {3, 0, tolerance})");
    return -1;
  }
  double tolerance = 0;
  std::memcpy(&tolerance, &request[2], sizeof tolerance);
  const zfp_type ztype = H5Tget_size(type) == 4 ? zfp_type_float : zfp_type_double;
  std::size_t n[4];
  const int used = used_dims(chunk_space, n);
  zfp_field* field = make_field(ztype, used, n);
  if (!field) return -1;
  unsigned stored[kMaxWords] = {kVersionWord};
  bitstream* bits = z.stream_open(&stored[1], sizeof(unsigned) * (kMaxWords - 1));
  zfp_stream* zs = bits ? z.zfp_stream_open(bits) : nullptr;
  std::size_t header_bits = 0;
  if (zs) {
    z.zfp_stream_set_accuracy(zs, tolerance);
    header_bits = z.zfp_write_header(zs, field, ZFP_HEADER_FULL);
    z.zfp_stream_flush(zs);
  }
  if (zs) z.zfp_stream_close(zs);
  if (bits) z.stream_close(bits);
  z.zfp_field_free(field);
  if (header_bits == 0) {
    push_error("heatsolve_zfp_set_local", H5E_CANTINIT, "ZFP: cannot write the header");
    return -1;
  }
  const std::size_t words = 1 + (header_bits + 31) / 32;
  return H5Pmodify_filter(dcpl, kFilterId, flags, words, stored);
}

// Compresses (or with H5Z_FLAG_REVERSE decompresses) one chunk in *buf. Returns the new
// number of bytes in *buf, 0 on failure (HDF5 keeps *buf then).
std::size_t filter(unsigned flags, std::size_t cd_nelmts, const unsigned cd_values[],
                   std::size_t nbytes, std::size_t* buf_size, void** buf) {
  constexpr const char* func = "heatsolve_zfp_filter";
  if (cd_nelmts < 2 || cd_nelmts > kMaxWords) {
    push_error(func, H5E_BADVALUE, "ZFP: unexpected filter parameters");
    return 0;
  }
  const ZfpCalls& z = zfp();
  if (!z.problem.empty()) {
    push_error(func, H5E_CANTINIT, z.problem.c_str());
    return 0;
  }
  const bool decompress = (flags & H5Z_FLAG_REVERSE) != 0;
  if (decompress && writer_codec(cd_values[0]) > ZFP_CODEC) {
    push_error(func, H5E_READERROR, "ZFP: the data were written by a newer ZFP codec");
    return 0;
  }
  // The header: ZFP's stream parameters and the chunk's type and shape.
  unsigned header[kMaxWords] = {};
  std::memcpy(header, cd_values + 1, sizeof(unsigned) * (cd_nelmts - 1));
  bitstream* hbits = z.stream_open(header, sizeof(unsigned) * (cd_nelmts - 1));
  zfp_stream* zs = hbits ? z.zfp_stream_open(hbits) : nullptr;
  zfp_field* field = zs ? z.zfp_field_alloc() : nullptr;
  const bool have_header = field && z.zfp_read_header(zs, field, ZFP_HEADER_FULL) != 0;
  if (zs) z.zfp_stream_set_bit_stream(zs, nullptr);
  if (hbits) z.stream_close(hbits);
  std::size_t result = 0, out_capacity = 0;
  const char* problem = nullptr;
  void* out = nullptr;
  bitstream* data_bits = nullptr;
  if (!have_header) {
    problem = "ZFP: cannot read the header in the filter parameters";
  } else {
    const std::size_t value_bytes = z.zfp_field_type(field) == zfp_type_float ? 4 : 8;
    const std::size_t raw_bytes = z.zfp_field_size(field, nullptr) * value_bytes;
    if (decompress) {
      out_capacity = raw_bytes;
      out = H5allocate_memory(raw_bytes, false);
      data_bits = out ? z.stream_open(*buf, nbytes) : nullptr;
      if (data_bits) {
        z.zfp_field_set_pointer(field, out);
        z.zfp_stream_set_bit_stream(zs, data_bits);
        z.zfp_stream_rewind(zs);
        if (z.zfp_decompress(zs, field) != 0) result = raw_bytes;
      }
      if (!result) problem = "ZFP: decompression failed";
    } else if (nbytes != raw_bytes) {
      problem = "ZFP: the chunk's size does not match the filter's header";
    } else {
      z.zfp_field_set_pointer(field, *buf);
      out_capacity = z.zfp_stream_maximum_size(zs, field);
      out = H5allocate_memory(out_capacity, false);
      data_bits = out ? z.stream_open(out, out_capacity) : nullptr;
      if (data_bits) {
        z.zfp_stream_set_bit_stream(zs, data_bits);
        z.zfp_stream_rewind(zs);
        result = z.zfp_compress(zs, field);
      }
      if (!result) problem = "ZFP: compression failed";
    }
  }
  if (data_bits) z.stream_close(data_bits);
  if (field) z.zfp_field_free(field);
  if (zs) z.zfp_stream_close(zs);
  if (problem) {
    if (out) H5free_memory(out);
    push_error(func, H5E_CANTFILTER, problem);
    return 0;
  }
  H5free_memory(*buf);
  *buf = out;
  *buf_size = out_capacity;
  return result;
}

const H5Z_class2_t kClass = {
    H5Z_CLASS_T_VERS,
    static_cast<H5Z_filter_t>(kFilterId),
    1,  // encoder present
    1,  // decoder present
    "H5Z-ZFP 1.1.0 format (heatsolve, ZFP " ZFP_VERSION_STRING ")",
    can_apply,
    set_local,
    filter,
};

}  // namespace

bool built_in() {
  return true;
}

const H5Z_class2_t* filter_class() {
  return &kClass;
}

void ensure_registered() {
  static std::once_flag once;
  static herr_t status = 0;
  if (!zfp().problem.empty()) throw std::runtime_error(zfp().problem);
  std::call_once(once, [] { status = H5Zregister(&kClass); });
  if (status < 0) throw std::runtime_error("HDF5: cannot register the ZFP filter (H5Zregister)");
}

void add_accuracy_filter(hid_t dcpl, double tolerance) {
  ensure_registered();
  unsigned request[kRequestWords] = {kModeAccuracy, 0, 0, 0};
  std::memcpy(&request[2], &tolerance, sizeof tolerance);
  if (H5Pset_filter(dcpl, kFilterId, H5Z_FLAG_MANDATORY, kRequestWords, request) < 0)
    throw std::runtime_error("HDF5: cannot add the ZFP filter to a dataset creation list");
}

}  // namespace heatsolve::h5zfp

#else  // without HDF5 or ZFP

namespace heatsolve::h5zfp {

bool built_in() {
  return false;
}

#ifdef HEATSOLVE_HAVE_HDF5
const H5Z_class2_t* filter_class() {
  return nullptr;
}
void ensure_registered() {
  throw std::runtime_error(
      "this heatsolve was built without the ZFP library: ZFP-compressed data cannot be written "
      "or read (Debian: install libzfp-dev and rebuild)");
}
void add_accuracy_filter(hid_t, double) {
  ensure_registered();
}
#endif

}  // namespace heatsolve::h5zfp

#endif
