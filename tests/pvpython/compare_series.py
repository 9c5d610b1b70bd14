#!/usr/bin/env pvpython
"""Checks that ParaView reads the same time series from two heatsolve outputs.

usage: pvpython compare_series.py A B [--array NAME] [--rtol 1e-12] [--steps N]

A and B are files ParaView opens (.xdmf, .pvd, .vti, .pvti): typically the run's XDMF
(HDF5 writer) and its PVD (VTK writer). For every time step of A the script checks that B has
the same time (relative 1e-12), then updates both readers at that time and checks that the cell
array ARRAY exists in both, that both have the same number of cells, point dimensions and
spatial bounds, and that max |a - b| <= RTOL * max(1, max |a|). With --steps N the number of
time steps must be N. Exits 0 when everything agrees, else prints each difference to stderr
and exits 1 (2 for usage errors). Runs headless: reading needs no display.
"""
import argparse
import os
import sys


def open_reader(path):
    import paraview.simple as pvs

    ext = os.path.splitext(path)[1].lower()
    if ext in (".xdmf", ".xmf"):
        return pvs.Xdmf3ReaderS(FileName=[path])
    if ext == ".pvd":
        return pvs.PVDReader(FileName=path)
    return pvs.OpenDataFile(path)


def times_of(reader):
    reader.UpdatePipelineInformation()
    times = reader.TimestepValues
    if times is None:
        return []
    try:
        return [float(t) for t in times]
    except TypeError:
        return [float(times)]


def fetch(reader, time):
    """The single data set the reader produces at `time` (composite output flattened)."""
    from paraview import servermanager

    reader.UpdatePipeline(time)
    data = servermanager.Fetch(reader)
    if data is None:
        return None
    if data.IsA("vtkCompositeDataSet"):
        leaves = []
        it = data.NewIterator()
        it.InitTraversal()
        while not it.IsDoneWithTraversal():
            leaves.append(it.GetCurrentDataObject())
            it.GoToNextItem()
        return leaves[0] if len(leaves) == 1 else None
    return data


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("a", help="first series (e.g. run.xdmf)")
    p.add_argument("b", help="second series (e.g. run.pvd)")
    p.add_argument("--array", default=None,
                   help="cell array to compare (default: the run's field, `temperature` or "
                        "`solution` (Poisson), whichever A has)")
    p.add_argument("--rtol", type=float, default=1e-12,
                   help="max |a-b| allowed, relative to max(1, max|a|) (default 1e-12)")
    p.add_argument("--steps", type=int, default=None, help="expected number of time steps")
    args = p.parse_args()
    for f in (args.a, args.b):
        if not os.path.isfile(f):
            sys.stderr.write("compare_series: FAIL: no such file: %s\n" % f)
            return 1

    import numpy as np
    from vtkmodules.util.numpy_support import vtk_to_numpy

    errors = []
    ra, rb = open_reader(os.path.abspath(args.a)), open_reader(os.path.abspath(args.b))
    ta, tb = times_of(ra), times_of(rb)
    if len(ta) != len(tb) or any(abs(x - y) > 1e-12 * max(1.0, abs(x)) for x, y in zip(ta, tb)):
        errors.append("time steps differ:\n  %s: %s\n  %s: %s" % (args.a, ta, args.b, tb))
    if args.steps is not None and len(ta) != args.steps:
        errors.append("%s has %d time steps, expected %d" % (args.a, len(ta), args.steps))
    if not ta:
        errors.append("%s has no time steps" % args.a)

    worst = 0.0
    if not errors:
        for t in ta:
            da, db = fetch(ra, t), fetch(rb, t)
            if da is None or db is None:
                errors.append("t=%.17g: a reader produced no (single) data set" % t)
                continue
            if da.GetNumberOfCells() != db.GetNumberOfCells():
                errors.append("t=%.17g: %d cells vs %d" % (t, da.GetNumberOfCells(),
                                                          db.GetNumberOfCells()))
                continue
            if hasattr(da, "GetDimensions") and hasattr(db, "GetDimensions"):
                if list(da.GetDimensions()) != list(db.GetDimensions()):
                    errors.append("t=%.17g: point dimensions %s vs %s"
                                  % (t, list(da.GetDimensions()), list(db.GetDimensions())))
            ba, bb = da.GetBounds(), db.GetBounds()
            scale = max(1.0, max(abs(v) for v in ba))
            if any(abs(x - y) > 1e-12 * scale for x, y in zip(ba, bb)):
                errors.append("t=%.17g: bounds %s vs %s" % (t, list(ba), list(bb)))
            if args.array is None:
                args.array = next((n for n in ("temperature", "solution")
                                   if da.GetCellData().GetArray(n) is not None), "temperature")
            aa, ab = da.GetCellData().GetArray(args.array), db.GetCellData().GetArray(args.array)
            if aa is None or ab is None:
                errors.append("t=%.17g: cell array '%s' missing in %s" % (
                    t, args.array, " and ".join(n for n, x in ((args.a, aa), (args.b, ab))
                                                if x is None)))
                continue
            va = vtk_to_numpy(aa).astype(np.float64)
            vb = vtk_to_numpy(ab).astype(np.float64)
            if va.shape != vb.shape:
                errors.append("t=%.17g: array shapes %s vs %s" % (t, va.shape, vb.shape))
                continue
            diff = float(np.max(np.abs(va - vb))) if va.size else 0.0
            tol = args.rtol * max(1.0, float(np.max(np.abs(va))) if va.size else 0.0)
            worst = max(worst, diff)
            if not diff <= tol:
                errors.append("t=%.17g: max |a-b| = %.3e > %.3e" % (t, diff, tol))
    if errors:
        for e in errors:
            sys.stderr.write("compare_series: FAIL: %s\n" % e)
        return 1
    print("compare_series: OK: %s and %s agree at %d time steps (%s cells, max |diff| %.3e)"
          % (args.a, args.b, len(ta), da.GetNumberOfCells(), worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
