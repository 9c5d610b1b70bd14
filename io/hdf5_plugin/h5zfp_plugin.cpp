// libheatsolve_h5zfp.so: heatsolve's ZFP filter (io/hdf5_zfp.hpp) as an HDF5 filter plugin,
// for programs linked against the same (Open MPI) HDF5 library as heatsolve, ParaView's Xdmf
// and HDF5 readers above all: with HDF5_PLUGIN_PATH naming the directory that holds it
// (installed: <prefix>/lib/heatsolve/hdf5-plugins) they read heatsolve's zfp-compressed
// series. (Programs on the serial HDF5 library, h5py and h5dump on Debian, use Debian's own
// H5Z-ZFP plugin, hdf5-filter-plugin-zfp-serial, found without any setting.)
#include <H5PLextern.h>

#include "io/hdf5_zfp.hpp"

extern "C" {

H5PL_type_t H5PLget_plugin_type(void) {
  return H5PL_TYPE_FILTER;
}

const void* H5PLget_plugin_info(void) {
  return heatsolve::h5zfp::filter_class();
}

}  // extern "C"
