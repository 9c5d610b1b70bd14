// The ZFP compression filter for HDF5, in H5Z-ZFP's format (HDF Group filter id 32013), built
// into heatsolve (and into an HDF5 plugin module for other readers, io/hdf5_plugin/).
//
// Why built in: Debian's H5Z-ZFP plugin (hdf5-filter-plugin-zfp-serial) is linked against the
// *serial* HDF5 library, with its symbols versioned HDF5_SERIAL_*. heatsolve (and ParaView)
// use the Open MPI HDF5 library: loaded there through HDF5_PLUGIN_PATH the plugin calls into a
// second HDF5 library that knows none of the caller's identifiers, and every dataset creation
// fails ("not a dataspace"). So heatsolve carries the filter itself, compiled against the
// HDF5 it links and the ZFP library (libzfp). Files are H5Z-ZFP files: the filter's
// parameters in the dataset header (a version word, then ZFP's full header written by
// zfp_write_header) and each chunk a bare ZFP stream, so h5py and the serial HDF5 tools read
// them through Debian's plugin, and ParaView through libheatsolve_h5zfp.so.
//
// Only the fixed-accuracy mode is written (each value within the tolerance); any H5Z-ZFP mode
// is read.
#pragma once

#ifdef HEATSOLVE_HAVE_HDF5
#include <hdf5.h>
#endif

namespace heatsolve::h5zfp {

constexpr int kFilterId = 32013;  // H5Z_FILTER_ZFP, registered with The HDF Group

// True when this build has the filter (built with libzfp and HDF5).
bool built_in();

#ifdef HEATSOLVE_HAVE_HDF5
// Registers the filter with the HDF5 library of this process (once; later calls do nothing).
// Throws std::runtime_error when the build has no filter or HDF5 refuses it.
void ensure_registered();

// Appends the filter to a chunked dataset creation list: ZFP's fixed-accuracy mode, every
// stored value within `tolerance` (absolute) of the value written. Registers the filter.
void add_accuracy_filter(hid_t dcpl, double tolerance);

// The filter's class, for H5Zregister and the plugin entry points; null without the filter.
const H5Z_class2_t* filter_class();
#endif

}  // namespace heatsolve::h5zfp
