"""heatsolve in-situ pipeline (ParaView 5.11 Catalyst v1): the isosurface of the field
(`temperature`, or `solution` for Poisson) at the middle of its range at that step
(min + (max - min) / 2), seen obliquely in the grid's outline, coloured by the field, with the
time and step (Poisson: the iteration) annotated, saved as
contour_<step>.png (6 digits) in the run's output directory. 2D runs get the isoline.

Deck:  output: {catalyst: {script: ../postproc/catalyst/contour.py, every: 50}}
Debian's ParaView renders through X even off-screen: without $DISPLAY run heatsolve under a
virtual X server (xvfb-run -a heatsolve run ...).
"""
import os

from paraview import coprocessing
from paraview.simple import *  # noqa: F401,F403 (the Catalyst script convention)
from vtkmodules.vtkCommonCore import vtkDoubleArray
from vtkmodules.vtkParallelCore import vtkCommunicator, vtkMultiProcessController

IMAGE_SIZE = [800, 600]


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
    """A hidden name next to `path`, unique to this process, with the same extension (ParaView
    picks the image format from it): extracts are written there and renamed into place, so that
    a full disk or a kill never leaves a truncated file under the final name. heatsolve removes
    such leftovers at its next start in the directory."""
    directory, name = os.path.split(path)
    stem, extension = os.path.splitext(name)
    return os.path.join(directory, ".%s.tmp%d%s" % (stem, os.getpid(), extension))


def clear_temporary(tmp):
    """Removes a stale temporary; refuses to write through a symbolic link planted there."""
    if os.path.islink(tmp):
        raise RuntimeError("%s is a symbolic link: not writing through it" % tmp)
    if os.path.lexists(tmp):
        os.remove(tmp)


def publish(tmp, path):
    """fsync, then rename the finished temporary over the final name."""
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save_screenshot(path, view, resolution):
    """SaveScreenshot through a temporary name (collective: every rank renders, rank 0 writes
    the file). Raises when the image was not written completely (e.g. a full disk)."""
    root = servermanager.vtkProcessModule.GetProcessModule().GetPartitionId() == 0
    tmp = temporary_name(path)
    if root:
        clear_temporary(tmp)
    try:
        ok = SaveScreenshot(tmp, view, ImageResolution=resolution)
        if root:
            complete = os.path.isfile(tmp) and os.path.getsize(tmp) > 12
            if complete and tmp.endswith(".png"):
                with open(tmp, "rb") as f:
                    f.seek(-12, os.SEEK_END)
                    complete = f.read()[4:8] == b"IEND"
            if ok is False or not complete:
                raise RuntimeError("cannot write %s (the image is incomplete: full disk?)" % path)
            publish(tmp, path)
    finally:
        if root and os.path.lexists(tmp) and not os.path.islink(tmp):
            os.remove(tmp)


def global_range(datadescription):
    """min and max of the field over the whole grid (all ranks)."""
    piece = datadescription.GetInputDescriptionByName("input").GetGrid()
    lo, hi = piece.GetCellData().GetArray(field_name(datadescription)).GetRange()
    controller = vtkMultiProcessController.GetGlobalController()
    if controller is None or controller.GetNumberOfProcesses() == 1:
        return lo, hi
    local, merged = vtkDoubleArray(), vtkDoubleArray()
    local.SetNumberOfTuples(2)
    local.SetValue(0, -lo)
    local.SetValue(1, hi)
    controller.AllReduce(local, merged, vtkCommunicator.MAX_OP)
    return -merged.GetValue(0), merged.GetValue(1)


class ContourCoProcessor(coprocessing.CoProcessor):
    def CreatePipeline(self, datadescription):
        grid = self.CreateProducer(datadescription, "input")
        description = datadescription.GetInputDescriptionByName("input")
        extent, piece = description.GetWholeExtent(), description.GetGrid()
        origin, spacing = piece.GetOrigin(), piece.GetSpacing()
        bounds = [origin[i // 2] + extent[i] * spacing[i // 2] for i in range(6)]
        centre = [0.5 * (bounds[2 * a] + bounds[2 * a + 1]) for a in range(3)]
        size = max(bounds[1] - bounds[0], bounds[3] - bounds[2], bounds[5] - bounds[4])
        three_d = extent[5] > extent[4]
        # Contours need point data; ghost-free pieces leave seams at rank boundaries only
        # where the averaged point values differ, which they do not for a smooth field.
        self.points = CellDatatoPointData(Input=grid)
        self.contour = Contour(Input=self.points)
        field = field_name(datadescription)
        self.contour.ContourBy = ["POINTS", field]
        self.contour.ComputeScalars = 1
        view = CreateView("RenderView")
        view.ViewSize = IMAGE_SIZE
        view.OrientationAxesVisibility = 1
        view.UseColorPaletteForBackground = 0
        view.Background = [1.0, 1.0, 1.0]
        outline = Show(grid, view)
        outline.SetRepresentationType("Outline")
        outline.ColorArrayName = [None, ""]
        outline.AmbientColor = outline.DiffuseColor = [0.2, 0.2, 0.2]
        surface = Show(self.contour, view)
        self.lut = GetColorTransferFunction(field)
        surface.ColorArrayName = ["POINTS", field]
        surface.LookupTable = self.lut
        surface.SetScalarBarVisibility(view, True)
        bar = GetScalarBar(self.lut, view)
        bar.Title = field
        bar.ComponentTitle = ""
        bar.TitleColor = bar.LabelColor = [0.1, 0.1, 0.1]
        self.label = Text(Text="")
        label = Show(self.label, view)
        label.WindowLocation = "Upper Left Corner"
        label.FontSize = 14
        label.Color = [0.1, 0.1, 0.1]
        view.CameraFocalPoint = centre
        if three_d:
            view.CameraPosition = [centre[0] + 1.6 * size, centre[1] - 2.2 * size,
                                   centre[2] + 1.4 * size]
            view.CameraViewUp = [0.0, 0.0, 1.0]
        else:
            view.CameraPosition = [centre[0], centre[1], centre[2] + 10.0 * size]
            view.CameraViewUp = [0.0, 1.0, 0.0]
        view.ResetCamera()
        self.view = view


coprocessor = ContourCoProcessor()
coprocessor.SetUpdateFrequencies({"input": [1]})  # heatsolve's `every` decides when


def RequestDataDescription(datadescription):
    coprocessor.LoadRequestedData(datadescription)


def DoCoProcessing(datadescription):
    coprocessor.UpdateProducers(datadescription)
    coprocessor.view.ViewTime = datadescription.GetTime()  # the producer holds this time only
    lo, hi = global_range(datadescription)
    level = lo + 0.5 * (hi - lo)
    coprocessor.contour.Isosurfaces = [level]
    coprocessor.lut.RescaleTransferFunction(lo, hi if hi > lo else lo + 1e-12)
    coprocessor.label.Text = "%s\nisosurface %s = %.4g" % (
        when(datadescription), field_name(datadescription), level)
    save_screenshot(output_file(datadescription, "contour", "png"), coprocessor.view, IMAGE_SIZE)
