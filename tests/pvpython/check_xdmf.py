#!/usr/bin/env pvpython
"""Checks that ParaView opens a heatsolve XDMF time series.

usage: pvpython check_xdmf.py FILE.xdmf ARRAY NX,NY[,NZ] MIN MAX
           [--tol T] [--timesteps N] [--bounds X0,X1,Y0,Y1,Z0,Z1] [--reader xdmf3s|xdmf3t|xdmf2]

Opens FILE with ParaView's XDMF3 reader, updates the last time step, and checks that the cell
array ARRAY exists, that the mesh has NX*NY*NZ cells (and, for image data, that shape), and
that the array's range is [MIN, MAX] within T (default 1e-6 * max(1, |MIN|, |MAX|)).
Optionally checks the number of time steps and the spatial bounds. Exits 0 when everything
matches; otherwise prints what differs to stderr and exits 1 (2 for usage errors).
Runs headless: reading needs no display.
"""
import argparse
import os
import sys


def fail(message):
    sys.stderr.write("check_xdmf: FAIL: %s\n" % message)
    sys.exit(1)


def parse_floats(text, count, what):
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != count:
        raise argparse.ArgumentTypeError("%s needs %d comma-separated numbers" % (what, count))
    return values


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file")
    p.add_argument("array")
    p.add_argument("shape", help="cells per axis, x,y[,z]")
    p.add_argument("min", type=float)
    p.add_argument("max", type=float)
    p.add_argument("--tol", type=float, default=None)
    p.add_argument("--timesteps", type=int, default=None)
    p.add_argument("--bounds", default=None)
    p.add_argument("--reader", choices=["xdmf3s", "xdmf3t", "xdmf2"], default="xdmf3s")
    args = p.parse_args()

    try:
        shape = [int(v) for v in args.shape.split(",")]
    except ValueError:
        p.error("shape must be x,y[,z] integers")
    if len(shape) == 2:
        shape.append(1)
    if len(shape) != 3 or min(shape) < 1:
        p.error("shape must be x,y[,z] positive integers")
    bounds = None
    if args.bounds:
        try:
            bounds = parse_floats(args.bounds, 6, "--bounds")
        except argparse.ArgumentTypeError as e:
            p.error(str(e))
    tol = args.tol if args.tol is not None else 1e-6 * max(1.0, abs(args.min), abs(args.max))

    if not os.path.isfile(args.file):
        fail("no such file: %s" % args.file)

    from paraview import servermanager
    import paraview.simple as pvs

    path = os.path.abspath(args.file)
    if args.reader == "xdmf3s":
        reader = pvs.Xdmf3ReaderS(FileName=[path])
    elif args.reader == "xdmf3t":
        reader = pvs.Xdmf3ReaderT(FileName=[path])
    else:
        reader = pvs.XDMFReader(FileNames=[path])

    reader.UpdatePipelineInformation()
    times = list(reader.TimestepValues) if reader.TimestepValues is not None else []
    if not isinstance(times, list):
        times = [times]
    if args.timesteps is not None and len(times) != args.timesteps:
        fail("%d time steps, expected %d (%s)" % (len(times), args.timesteps, times))
    last = times[-1] if times else 0.0
    reader.UpdatePipeline(last)
    data = servermanager.Fetch(reader)
    if data is None:
        fail("the reader produced no data for %s" % path)

    # Temporal collections come out as one data set; be tolerant of composite output.
    leaves = []
    if data.IsA("vtkCompositeDataSet"):
        it = data.NewIterator()
        it.InitTraversal()
        while not it.IsDoneWithTraversal():
            leaves.append(it.GetCurrentDataObject())
            it.GoToNextItem()
    else:
        leaves.append(data)
    if len(leaves) != 1:
        fail("expected one data set at time %g, got %d" % (last, len(leaves)))
    ds = leaves[0]

    cells = shape[0] * shape[1] * shape[2]
    if ds.GetNumberOfCells() != cells:
        fail("%d cells, expected %d (%s) [%s]" % (ds.GetNumberOfCells(), cells, args.shape,
                                                  ds.GetClassName()))
    if ds.IsA("vtkImageData") or ds.IsA("vtkRectilinearGrid") or ds.IsA("vtkStructuredGrid"):
        dims = list(ds.GetDimensions())
        want = [n + 1 for n in shape]
        # One cell in z: 2D data are one point thick, a one-cell-deep 3D grid two.
        if dims != want and not (shape[2] == 1 and dims[:2] == want[:2] and dims[2] == 1):
            fail("point dimensions %s, expected %s" % (dims, want))

    array = ds.GetCellData().GetArray(args.array)
    if array is None:
        names = [ds.GetCellData().GetArrayName(i) for i in range(ds.GetCellData().GetNumberOfArrays())]
        pnames = [ds.GetPointData().GetArrayName(i) for i in range(ds.GetPointData().GetNumberOfArrays())]
        fail("no cell array '%s' (cell arrays %s, point arrays %s)" % (args.array, names, pnames))
    if array.GetNumberOfTuples() != cells:
        fail("array '%s' has %d tuples, expected %d" % (args.array, array.GetNumberOfTuples(), cells))
    lo, hi = array.GetRange(0)
    if abs(lo - args.min) > tol or abs(hi - args.max) > tol:
        fail("range of '%s' at time %g is [%.17g, %.17g], expected [%.17g, %.17g] within %g"
             % (args.array, last, lo, hi, args.min, args.max, tol))

    if bounds is not None:
        got = list(ds.GetBounds())
        btol = 1e-9 * max(1.0, max(abs(b) for b in bounds))
        if any(abs(g - w) > btol for g, w in zip(got, bounds)):
            fail("bounds %s, expected %s" % (got, bounds))

    print("check_xdmf: OK: %s: %s %s, %d cells, %d time steps (last %g), range [%g, %g]"
          % (args.file, ds.GetClassName(), args.array, cells, len(times), last, lo, hi))
    return 0


if __name__ == "__main__":
    sys.exit(main())
