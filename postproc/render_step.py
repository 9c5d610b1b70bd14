#!/usr/bin/env pvbatch
"""Render one output step of a heatsolve series with ParaView (slice + colour bar) to a PNG.

usage: pvbatch --force-offscreen-rendering postproc/render_step.py FILE [--step N | --index I]
                [--out IMG.png] [--axis z] [--size 800x600] [--range LO,HI] [--cmap NAME]
                [--camera axis|iso]

FILE is the run's <name>.xdmf (HDF5 writer) or <name>.pvd (VTK writer). --step is the solver
step number of an output step (read from the XDMF grid names / the PVD file names); --index the
position in the series (negative from the end); default the last step. 3D data are cut by the
mid-plane normal to --axis (with the domain outline); 2D data are shown whole. The picture is
coloured by the run's cell array (`temperature`, or `solution` for a Poisson run), with a colour
bar and the time (Poisson: the iteration).

Off-screen: pvbatch --force-offscreen-rendering renders without a window where ParaView was
built with EGL or OSMesa; Debian's ParaView 5.11 is built for X only and needs an X server
even off-screen: without $DISPLAY run it under a virtual one,
  xvfb-run -a pvbatch --force-offscreen-rendering postproc/render_step.py run.xdmf --out a.png
"""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET

AXES = "xyz"
FIELDS = ("temperature", "solution")  # heat, Poisson


def fail(message, code=1):
    sys.stderr.write("render_step: error: %s\n" % message)
    sys.exit(code)


def steps_and_times(path):
    """[(step number, time)] of the series in file order, from the XML itself."""
    root = ET.parse(path).getroot()
    out = []
    if path.lower().endswith(".pvd"):
        for ds in root.iter("DataSet"):
            m = re.search(r"_(\d+)(?:_\d+)?\.p?vti$", ds.get("file", ""))
            out.append((int(m.group(1)) if m else None, float(ds.get("timestep", "0"))))
    else:
        for grid in root.iter("Grid"):
            if grid.get("GridType", "Uniform") != "Uniform":
                continue
            m = re.match(r"step(\d+)$", grid.get("Name", ""))
            time = grid.find("Time")
            out.append((int(m.group(1)) if m else None,
                        float(time.get("Value")) if time is not None else 0.0))
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(prog="render_step.py", description=__doc__.split("\n")[0],
                                epilog=__doc__.split("\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="<name>.xdmf or <name>.pvd")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--step", type=int, default=None, help="solver step number of an output step")
    g.add_argument("--index", type=int, default=None,
                   help="position in the series (negative: from the end; default -1)")
    p.add_argument("-o", "--out", default=None, help="PNG to write (default <file>_<step>.png)")
    p.add_argument("--axis", choices=list(AXES), default="z", help="slice normal for 3D data")
    p.add_argument("--size", default="800x600", help="image size WxH (default 800x600)")
    p.add_argument("--range", default=None, help="colour range LO,HI (default: data range)")
    p.add_argument("--cmap", default="Inferno (matplotlib)", help="ParaView colour map preset")
    p.add_argument("--camera", choices=["axis", "iso"], default="axis",
                   help="look along the slice normal (default) or obliquely (3D)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    path = os.path.abspath(args.file)
    if not os.path.isfile(path):
        fail("no such file: %s" % args.file)
    try:
        w, h = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        fail("--size must be WxH, e.g. 800x600", 2)
    crange = None
    if args.range:
        try:
            crange = [float(v) for v in args.range.split(",")]
            assert len(crange) == 2
        except (ValueError, AssertionError):
            fail("--range must be LO,HI", 2)

    series = steps_and_times(path)
    if not series:
        fail("%s lists no time steps" % path)
    if args.step is not None:
        match = [i for i, (s, _) in enumerate(series) if s == args.step]
        if not match:
            fail("step %d not in %s (steps %s)" % (args.step, args.file,
                                                   [s for s, _ in series]))
        index = match[0]
    else:
        index = -1 if args.index is None else args.index
        if not -len(series) <= index < len(series):
            fail("--index %d outside a series of %d steps" % (index, len(series)))
    step, time = series[index]

    import paraview.simple as pvs
    from paraview import servermanager

    if path.lower().endswith(".pvd"):
        reader = pvs.PVDReader(FileName=path)
    else:
        reader = pvs.Xdmf3ReaderS(FileName=[path])
    reader.UpdatePipelineInformation()
    reader.UpdatePipeline(time)
    data = servermanager.Fetch(reader)
    if data.IsA("vtkCompositeDataSet"):
        it = data.NewIterator()
        it.InitTraversal()
        data = it.GetCurrentDataObject()
    bounds = data.GetBounds()
    centre = [0.5 * (bounds[2 * a] + bounds[2 * a + 1]) for a in range(3)]
    three_d = all(bounds[2 * a + 1] > bounds[2 * a] for a in range(3)) and \
        not (data.IsA("vtkImageData") and min(data.GetDimensions()) == 1)
    axis = AXES.index(args.axis)
    if three_d and data.IsA("vtkImageData"):
        # Cut through the centres of the middle cell layer (as plot_slice.py's default), not
        # along a face between two layers.
        ncells = data.GetDimensions()[axis] - 1
        centre[axis] = data.GetOrigin()[axis] + (data.GetExtent()[2 * axis] + ncells // 2 +
                                                 0.5) * data.GetSpacing()[axis]
    # heat runs write `temperature`, Poisson runs `solution` (whose steps are iterations).
    field = next((name for name in FIELDS if data.GetCellData().GetArray(name) is not None), None)
    if field is None:
        fail("no cell array %s in %s" % (" or ".join("'%s'" % f for f in FIELDS), args.file))
    steady = field == "solution"
    array = data.GetCellData().GetArray(field)
    lo, hi = crange if crange else array.GetRange(0)

    view = pvs.GetActiveViewOrCreate("RenderView")
    view.ViewSize = [w, h]
    view.ViewTime = time
    view.OrientationAxesVisibility = 1
    view.Background = [1.0, 1.0, 1.0]
    try:  # ParaView >= 5.10 keeps the background in a palette unless told otherwise
        view.UseColorPaletteForBackground = 0
    except AttributeError:
        pass

    normal = [0.0, 0.0, 0.0]
    normal[axis] = 1.0
    if three_d:
        cut = pvs.Slice(Input=reader)
        cut.SliceType = "Plane"
        cut.SliceType.Origin = centre
        cut.SliceType.Normal = normal
        shown = cut
        outline = pvs.Show(reader, view)
        outline.SetRepresentationType("Outline")
        outline.AmbientColor = outline.DiffuseColor = [0.2, 0.2, 0.2]
        pvs.ColorBy(outline, None)
    else:
        shown = reader
        normal = [0.0, 0.0, 1.0]
    disp = pvs.Show(shown, view)
    disp.SetRepresentationType("Surface")
    pvs.ColorBy(disp, ("CELLS", field))
    disp.Ambient, disp.Diffuse = 1.0, 0.0  # unshaded: the colours are exactly the colour map
    lut = pvs.GetColorTransferFunction(field)
    try:
        lut.ApplyPreset(args.cmap, True)
    except Exception:  # unknown preset name: keep ParaView's default map
        sys.stderr.write("render_step: warning: unknown colour map %r\n" % args.cmap)
    lut.RescaleTransferFunction(lo, hi if hi > lo else lo + 1e-12)
    disp.SetScalarBarVisibility(view, True)
    bar = pvs.GetScalarBar(lut, view)
    bar.Title = field
    bar.ComponentTitle = ""
    bar.TitleColor = bar.LabelColor = [0.1, 0.1, 0.1]

    if steady:
        label = "iteration %d" % (step if step is not None else int(time))
    else:
        label = "t = %.6g" % time + ("  (step %d)" % step if step is not None else "")
    if three_d:
        label += "\nslice %s = %.4g" % (args.axis, centre[axis])
    text = pvs.Text(Text=label)
    tdisp = pvs.Show(text, view)
    tdisp.WindowLocation = "Upper Left Corner"
    tdisp.FontSize = 14
    tdisp.Color = [0.1, 0.1, 0.1]

    view.CameraFocalPoint = centre
    if args.camera == "iso" and three_d:
        view.CameraPosition = [centre[0] + 1.6, centre[1] - 2.2, centre[2] + 1.4]
        view.CameraViewUp = [0.0, 0.0, 1.0]
    else:
        view.CameraPosition = [centre[a] + 10.0 * normal[a] for a in range(3)]
        view.CameraViewUp = [0.0, 0.0, 1.0] if axis != 2 and three_d else [0.0, 1.0, 0.0]
        view.CameraParallelProjection = 1
    view.ResetCamera()
    pvs.Render(view)

    out = args.out or os.path.splitext(path)[0] + "_%s.png" % (
        "%08d" % step if step is not None else "index%d" % index)
    pvs.SaveScreenshot(out, view, ImageResolution=[w, h])
    print("render_step: %s step %s (t = %.6g), %s [%.6g, %.6g] -> %s"
          % (args.file, step, time, field, lo, hi, out))
    sys.stdout.flush()
    # Tear the pipeline and the view down before the interpreter exits: with GLX (e.g. under
    # Xvfb) a render window destroyed during interpreter shutdown can fail with GLXBadContext.
    for proxy in list(pvs.GetSources().values()):
        pvs.Delete(proxy)
    pvs.Delete(view)
    del view
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
