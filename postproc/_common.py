"""Helpers shared by the heatsolve post-processing scripts (run directories, HDF5 series)."""
import glob
import json
import os
import sys


def fail(prog, message, code=1):
    sys.stderr.write("%s: error: %s\n" % (prog, message))
    sys.exit(code)


def load_summary(run_dir):
    """summary.json of a run directory, or None when absent."""
    path = os.path.join(run_dir, "summary.json")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def find_h5(path):
    """The HDF5 series of `path`: the file itself, else the run directory's <name>.h5."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise FileNotFoundError("no such file or directory: %s" % path)
    summary = load_summary(path)
    if summary is not None:
        for f in summary.get("files", []):
            if f.endswith(".h5"):
                cand = f if os.path.isabs(f) else os.path.join(path, os.path.basename(f))
                if os.path.isfile(cand):
                    return cand
                cand = os.path.join(path, os.path.basename(f))
                if os.path.isfile(cand):
                    return cand
        name = summary.get("name")
        if name and os.path.isfile(os.path.join(path, name + ".h5")):
            return os.path.join(path, name + ".h5")
    found = sorted(glob.glob(os.path.join(path, "*.h5")))
    if len(found) == 1:
        return found[0]
    if not found:
        raise FileNotFoundError("no .h5 file in %s (was the run made with formats: [hdf5]?)" % path)
    raise FileNotFoundError("several .h5 files in %s: %s; pass one" % (path, ", ".join(found)))


class Series:
    """A heatsolve HDF5 time series (format heatsolve-timeseries, see io/hdf5_writer.hpp)."""

    def __init__(self, path):
        import h5py

        self.path = path
        self.file = h5py.File(path, "r")
        a = self.file.attrs
        self.dims = int(a["dimensions"])
        self.cells = [int(v) for v in a["cells"]]
        self.origin = [float(v) for v in a["origin"]]
        self.spacing = [float(v) for v in a["spacing"]]
        # The field's name: `temperature` (heat), `solution` (Poisson); files of older versions
        # have no such attribute and always `temperature`.
        self.field_name = attr_text(a.get("field", b"temperature"))
        self.steady = attr_text(a.get("problem", b"heat")) == "poisson"
        self.steps = sorted(int(k) for k in self.file["steps"].keys())
        if not self.steps:
            raise ValueError("%s holds no output steps" % path)

    def group(self, step):
        return self.file["steps"]["%08d" % step]

    def resolve(self, step):
        """Step number `step` (None: the last one; negative: counted from the end)."""
        if step is None:
            return self.steps[-1]
        if step < 0:
            return self.steps[step]
        if step not in self.steps:
            raise KeyError("step %d not in %s (steps: %s)" % (step, self.path, short(self.steps)))
        return step

    def time(self, step):
        """The step's simulated time; a steady (Poisson) series has none: its iteration."""
        attrs = self.group(step).attrs
        if "time" in attrs:
            return float(attrs["time"])
        return float(attrs["iteration"])

    def field(self, step):
        """The field as a float64 array indexed [z][y][x] (2D: [y][x])."""
        import numpy as np

        return np.asarray(self.group(step)[self.field_name][...], dtype=np.float64)

    def centres(self, axis):
        import numpy as np

        return self.origin[axis] + (np.arange(self.cells[axis]) + 0.5) * self.spacing[axis]

    def lengths(self):
        return [self.cells[a] * self.spacing[a] for a in range(self.dims)]

    def close(self):
        self.file.close()


def attr_text(value):
    """An HDF5 string attribute as str (h5py gives fixed-length strings as bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def short(values, n=8):
    values = list(values)
    if len(values) <= n:
        return ", ".join(str(v) for v in values)
    return ", ".join(str(v) for v in values[: n // 2]) + ", ..., " + ", ".join(
        str(v) for v in values[-n // 2:])
