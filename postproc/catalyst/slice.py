"""heatsolve in-situ pipeline (ParaView 5.11 Catalyst v1): the mid-plane z slice (through the
centres of the middle cell layer) of the field (`temperature`, or `solution` for Poisson; a 2D
run: the whole field), coloured over the field's range at that step with a colour bar, the time
and step (Poisson: the iteration) annotated, saved as slice_<step>.png (6 digits) in the run's
output directory.

Deck:  output: {catalyst: {script: ../postproc/catalyst/slice.py, every: 50}}
(the path is relative to the deck file's directory). heatsolve calls it at every 50th step
and the last. Debian's ParaView renders through X even off-screen: without $DISPLAY heatsolve
starts a private virtual X server (Xvfb) for the run. The image goes through a temporary name
(.<name>.tmp<pid>.png) and is renamed into place once complete.
"""
import os

from paraview import coprocessing
from vtkmodules.vtkCommonCore import vtkDoubleArray
from vtkmodules.vtkParallelCore import vtkCommunicator, vtkMultiProcessController
from paraview.simple import *  # noqa: F401,F403 (the Catalyst script convention)

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


def whole_bounds(datadescription):
    """Bounds of the whole grid (this rank holds one piece of it under MPI)."""
    description = datadescription.GetInputDescriptionByName("input")
    extent, piece = description.GetWholeExtent(), description.GetGrid()
    origin, spacing = piece.GetOrigin(), piece.GetSpacing()
    return [origin[i // 2] + extent[i] * spacing[i // 2] for i in range(6)]


def global_range(datadescription):
    """min and max of the field over the whole grid: under MPI every rank colours its
    piece, so all must use the same range."""
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


class SliceCoProcessor(coprocessing.CoProcessor):
    def CreatePipeline(self, datadescription):
        grid = self.CreateProducer(datadescription, "input")
        extent = datadescription.GetInputDescriptionByName("input").GetWholeExtent()
        bounds = whole_bounds(datadescription)
        centre = [0.5 * (bounds[2 * a] + bounds[2 * a + 1]) for a in range(3)]
        three_d = extent[5] > extent[4]
        if three_d:  # through the middle cell layer's centres: one layer, on any decomposition
            hz = (bounds[5] - bounds[4]) / (extent[5] - extent[4])
            centre[2] = bounds[4] + ((extent[5] - extent[4]) // 2 + 0.5) * hz
        view = CreateView("RenderView")
        view.ViewSize = IMAGE_SIZE
        view.OrientationAxesVisibility = 0
        view.UseColorPaletteForBackground = 0
        view.Background = [1.0, 1.0, 1.0]
        shown = grid
        if three_d:
            shown = Slice(Input=grid)
            shown.SliceType = "Plane"
            shown.SliceType.Origin = centre
            shown.SliceType.Normal = [0.0, 0.0, 1.0]
            outline = Show(grid, view)
            outline.SetRepresentationType("Outline")
            outline.ColorArrayName = [None, ""]
            outline.AmbientColor = outline.DiffuseColor = [0.2, 0.2, 0.2]
        display = Show(shown, view)
        display.SetRepresentationType("Surface")
        field = field_name(datadescription)
        self.lut = GetColorTransferFunction(field)
        # Not ColorBy: it asks every rank for the range of its piece of the slice, which some
        # ranks do not have; DoCoProcessing sets the whole field's range instead.
        display.ColorArrayName = ["CELLS", field]
        display.LookupTable = self.lut
        display.Ambient, display.Diffuse = 1.0, 0.0  # unshaded: colours are the colour map
        display.SetScalarBarVisibility(view, True)
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
        view.CameraPosition = [centre[0], centre[1], centre[2] + 10.0]
        view.CameraViewUp = [0.0, 1.0, 0.0]
        view.CameraParallelProjection = 1
        view.ResetCamera()
        self.view, self.shown, self.three_d, self.centre = view, shown, three_d, centre


coprocessor = SliceCoProcessor()
coprocessor.SetUpdateFrequencies({"input": [1]})  # heatsolve's `every` decides when


def RequestDataDescription(datadescription):
    coprocessor.LoadRequestedData(datadescription)


def DoCoProcessing(datadescription):
    coprocessor.UpdateProducers(datadescription)
    coprocessor.view.ViewTime = datadescription.GetTime()  # the producer holds this time only
    lo, hi = global_range(datadescription)
    coprocessor.lut.RescaleTransferFunction(lo, hi if hi > lo else lo + 1e-12)
    text = when(datadescription)
    if coprocessor.three_d:
        text += "\nslice z = %.4g" % coprocessor.centre[2]
    coprocessor.label.Text = text
    save_screenshot(output_file(datadescription, "slice", "png"), coprocessor.view, IMAGE_SIZE)
