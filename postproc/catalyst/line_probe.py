"""heatsolve in-situ pipeline (ParaView 5.11 Catalyst v1): the field (`temperature`, or
`solution` for Poisson) along the x line
through the centre of the grid's middle cells (cell row j = ny/2, k = nz/2, integer
division), sampled at the centre of every cell of that row, written as
line_<step>.csv (6 digits) in the run's output directory: columns x, y, z and the field. The
file is written under a temporary name (.line_<step>.tmp<pid>.csv) and renamed once complete.

The sample points are cell centres, so the values are the field's own (no interpolation): the
CSV of step s equals row [k, j, :] of steps/<s>/<field> in the run's HDF5 file.
Deck:  output: {catalyst: {script: ../postproc/catalyst/line_probe.py, every: 10}}
"""
import os

from paraview import coprocessing
from paraview.simple import *  # noqa: F401,F403 (the Catalyst script convention)


def user_string(datadescription, name, default):
    """A string heatsolve passes in the data description's user data ('output_directory',
    'field', 'problem'); `default` when absent (older versions passed no field: it was
    'temperature')."""
    array = datadescription.GetUserData().GetAbstractArray(name)
    if array is None or array.GetNumberOfValues() == 0:
        return default
    return array.GetValue(0)


def field_name(datadescription):
    """The field's cell array: 'temperature' (heat) or 'solution' (Poisson)."""
    return user_string(datadescription, "field", "temperature")


def when(datadescription):
    """'t = 0.01  (step 40)'; for a steady solve, whose steps are iterations, 'iteration 40'."""
    if user_string(datadescription, "problem", "heat") == "poisson":
        return "iteration %d" % datadescription.GetTimeStep()
    return "t = %.6g  (step %d)" % (datadescription.GetTime(), datadescription.GetTimeStep())


def output_file(datadescription, stem, extension):
    """<output.directory>/<stem>_<step>.<extension>: heatsolve passes the run's output
    directory as the string array 'output_directory' of the data description's user data."""
    directory = datadescription.GetUserData().GetAbstractArray("output_directory").GetValue(0)
    return os.path.join(directory, "%s_%06d.%s" % (stem, datadescription.GetTimeStep(), extension))


def temporary_name(path):
    """A hidden name next to `path`, unique to this process: the CSV is written there and
    renamed into place, so that a full disk or a kill never leaves a truncated file under the
    final name. heatsolve removes such leftovers at its next start in the directory."""
    directory, name = os.path.split(path)
    stem, extension = os.path.splitext(name)
    return os.path.join(directory, ".%s.tmp%d%s" % (stem, os.getpid(), extension))


def whole_bounds(datadescription):
    """Bounds of the whole grid (this rank holds one piece of it under MPI)."""
    description = datadescription.GetInputDescriptionByName("input")
    extent, piece = description.GetWholeExtent(), description.GetGrid()
    origin, spacing = piece.GetOrigin(), piece.GetSpacing()
    return [origin[i // 2] + extent[i] * spacing[i // 2] for i in range(6)]


class LineCoProcessor(coprocessing.CoProcessor):
    def CreatePipeline(self, datadescription):
        grid = self.CreateProducer(datadescription, "input")
        extent = datadescription.GetInputDescriptionByName("input").GetWholeExtent()
        bounds = whole_bounds(datadescription)
        cells = [max(1, extent[2 * a + 1] - extent[2 * a]) for a in range(3)]
        h = [(bounds[2 * a + 1] - bounds[2 * a]) / cells[a] for a in range(3)]
        y = bounds[2] + (cells[1] // 2 + 0.5) * h[1]
        z = bounds[4] + (cells[2] // 2 + 0.5) * h[2] if extent[5] > extent[4] else bounds[4]
        # Probing the whole grid builds a cell locator over all of it at every call (1.8 s
        # on 128^3): probe only the row of cells the line runs through.
        j, k = cells[1] // 2, cells[2] // 2 if extent[5] > extent[4] else 0
        row = ExtractSubset(Input=grid)
        row.VOI = [extent[0], extent[1], j, j + 1, k, min(k + 1, extent[5])]
        self.line = PlotOverLine(Input=row)
        self.line.Point1 = [bounds[0] + 0.5 * h[0], y, z]
        self.line.Point2 = [bounds[1] - 0.5 * h[0], y, z]
        self.line.Resolution = max(1, cells[0] - 1)  # cells[0] points: every cell centre


coprocessor = LineCoProcessor()
coprocessor.SetUpdateFrequencies({"input": [1]})  # heatsolve's `every` decides when


def RequestDataDescription(datadescription):
    coprocessor.LoadRequestedData(datadescription)


def DoCoProcessing(datadescription):
    coprocessor.UpdateProducers(datadescription)
    coprocessor.line.UpdatePipeline(datadescription.GetTime())
    line = servermanager.Fetch(coprocessor.line)  # collective: the whole line on rank 0
    if servermanager.vtkProcessModule.GetProcessModule().GetPartitionId() != 0:
        return
    field = field_name(datadescription)
    values = line.GetPointData().GetArray(field)
    valid = line.GetPointData().GetArray("vtkValidPointMask")
    path = output_file(datadescription, "line", "csv")
    tmp = temporary_name(path)
    if os.path.lexists(tmp) and not os.path.islink(tmp):
        os.remove(tmp)  # a stale one; a symbolic link makes the exclusive open below fail
    try:
        with open(tmp, "x") as f:  # O_CREAT | O_EXCL: never through a symbolic link
            f.write("x,y,z,%s\n" % field)
            for i in range(line.GetNumberOfPoints()):
                if valid is not None and not valid.GetValue(i):
                    raise RuntimeError("line point %d lies outside the grid" % i)
                x, y, z = line.GetPoint(i)
                f.write("%.17g,%.17g,%.17g,%.17g\n" % (x, y, z, values.GetValue(i)))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp) and not os.path.islink(tmp):
            os.remove(tmp)
