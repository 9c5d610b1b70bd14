// Bad decks: every kind is rejected with a message that points at the offending line and
// column (a table of decks), YAML syntax errors, unreadable files and paths.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <ostream>
#include <string>

#include "io/deck.hpp"
#include "tests/io/deck_text.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;
using namespace deck_text;

// ---- Bad decks ------------------------------------------------------------------------------

struct BadDeck {
  const char* label;
  std::string text;
  const char* fragment;  // expected in the message
  int line;
  int column;  // 0: not checked
};

std::ostream& operator<<(std::ostream& os, const BadDeck& b) {
  return os << b.label;
}

class BadDeckTest : public ::testing::TestWithParam<BadDeck> {};

TEST_P(BadDeckTest, IsRejectedAtTheRightPlace) {
  const BadDeck& b = GetParam();
  const DeckError e = parse_error(b.text);
  EXPECT_EQ(e.file(), "test.yaml");
  EXPECT_NE(e.message().find(b.fragment), std::string::npos)
      << "message: " << e.message() << "\nexpected fragment: " << b.fragment;
  EXPECT_EQ(e.line(), b.line) << e.what();
  if (b.column > 0) {
    EXPECT_EQ(e.column(), b.column) << e.what();
  }
  const std::string prefix = "test.yaml:" + std::to_string(e.line()) + ":";
  EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
}

const std::string k2DHead = "name: t\nproblem: {type: heat, dimensions: 2}\n";

const BadDeck kBadDecks[] = {
    {"unknown_root_key", kBase + "materail: {diffusivity: 1}\n",
     "unknown key 'materail' in the deck (did you mean 'material'?)", 5, 1},
    {"unknown_section_key", kBase + "material: {difusivity: 2}\n",
     "unknown key 'difusivity' in 'material' (did you mean 'diffusivity'?)", 5, 12},
    {"cells_not_integer",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, abc, 8]}\n"
     "time: {end: 1}\n",
     "grid.cells[1]: expected a positive integer, got 'abc'", 3, 19},
    {"cells_fractional",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 2.5]}\n"
     "time: {end: 1}\n",
     "grid.cells[2]: expected a positive integer, got '2.5'", 3, 22},
    {"cells_zero",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [0, 8, 8]}\n"
     "time: {end: 1}\n",
     "expected a positive integer, got '0'", 3, 16},
    {"missing_name", "problem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n",
     "missing required key 'name'", 1, 1},
    {"missing_cells",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {length: [1, 1, 1]}\n"
     "time: {end: 1}\n",
     "missing required key 'grid.cells'", 3, 7},
    {"missing_problem_type", "name: t\nproblem:\n  dimensions: 3\ngrid: {cells: [8, 8, 8]}\n",
     "missing required key 'problem.type'", 3, 3},
    {"missing_time_for_heat",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n",
     "missing required key 'time'", 1, 1},
    {"cells_count_mismatch",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8]}\ntime: {end: 1}\n",
     "grid.cells: expected 3 entries", 3, 15},
    {"too_many_cells",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [100000, 100000, 100000]}\ntime: {end: 1}\n",
     "is too large", 3, 15},
    {"zero_length",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [8, 8, 8], length: [1, 0, 1]}\ntime: {end: 1}\n",
     "grid.length[1]: must be positive, got 0", 3, 38},
    {"negative_diffusivity", kBase + "material: {diffusivity: -1}\n",
     "material.diffusivity: must be positive", 5, 25},
    {"nan_diffusivity", kBase + "material: {diffusivity: .nan}\n",
     "material.diffusivity: expected a finite number, got '.nan'", 5, 25},
    {"inf_origin",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [8, 8, 8], origin: [0, -.inf, 0]}\ntime: {end: 1}\n",
     "expected a finite number, got '-.inf'", 3, 38},
    {"quoted_number", kBase + "material: {diffusivity: \"2\"}\n",
     "expected a number, got the quoted string \"2\"", 5, 25},
    {"zero_tolerance", kBase + "solver: {tolerance: 0}\n", "solver.tolerance: must be positive", 5,
     21},
    {"bad_problem_type",
     "name: t\nproblem: {type: wave, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n",
     "problem.type: unknown value 'wave'; valid values: heat, poisson", 2, 17},
    {"four_dimensions", "name: t\nproblem: {type: heat, dimensions: 4}\ngrid: {cells: [8, 8, 8]}\n",
     "problem.dimensions: expected 2 or 3, got 4", 2, 35},
    {"periodic_one_side", kBase + "boundary: {x-: {type: periodic}}\n",
     "periodic must be set on both x- and x+, but x+ is dirichlet", 5, 16},
    {"periodic_all_but_one", kBase + "boundary: {all: {type: periodic}, y+: {type: dirichlet}}\n",
     "boundary.y-: periodic must be set on both y- and y+", 5, 17},
    {"z_face_in_2d",
     k2DHead + "grid: {cells: [8, 8]}\ntime: {end: 1}\nboundary: {z-: {type: dirichlet}}\n",
     "boundary.z-: a 2D problem has no z faces", 5, 12},
    {"face_key_for_wrong_type", kBase + "boundary: {all: {type: neumann, value: 1}}\n",
     "unknown key 'value' in 'boundary.all'; valid keys: type, flux", 5, 33},
    {"unknown_face", kBase + "boundary: {x_: {type: neumann}}\n",
     "unknown key 'x_' in 'boundary' (did you mean 'x-'?)", 5, 12},
    {"dt_too_large",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, dt: 0.01}\n",
     "time.dt: 0.01 exceeds the stability limit dt_max = 0.00260417", 4, 20},
    {"end_and_steps",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, steps: 10}\n",
     "give either 'end' or 'steps', not both", 4, 16},
    {"neither_end_nor_steps",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {dt: auto}\n",
     "missing required key 'time.end' (or 'time.steps')", 4, 7},
    {"negative_steps",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {steps: -3}\n",
     "time.steps: expected a non-negative integer, got '-3'", 4, 15},
    {"safety_above_one",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, safety: 1.5}\n",
     "time.safety: must be in (0, 1], got 1.5", 4, 24},
    {"unknown_kernel", kBase + "execution: {kernel: fast}\n",
     "execution.kernel: unknown value 'fast'; valid values: auto, naive, shared", 5, 21},
    {"misspelt_kernel", kBase + "execution: {kernel: nondivergant}\n",
     "(did you mean 'nondivergent'?)", 5, 21},
    {"bad_walltime", kBase + "execution: {walltime: \"1:30\"}\n",
     "execution.walltime: expected a duration \"HH:MM:SS\"", 5, 23},
    {"walltime_minutes_over_59", kBase + "execution: {walltime: \"01:75:00\"}\n",
     "expected a duration \"HH:MM:SS\"", 5, 23},
    {"dt_word",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, dt: automatic}\n",
     "time.dt: expected 'auto' or a positive number, got 'automatic'", 4, 20},
    {"block_word", kBase + "execution: {block: big}\n",
     "execution.block: expected 'auto' or a list of 3 positive integers, got 'big'", 5, 20},
    // Blocks the CUDA build does not compile for the variant, dimension and precision
    // (core/stencil_policies.hpp): at the block key, with the compiled shapes listed.
    {"block_not_compiled", kBase + "execution: {kernel: naive, block: [48, 3, 1]}\n",
     "execution.block: block 48x3x1 is not compiled for stencil variant 'naive' in 3D double "
     "(compiled: 32x4x4, ",
     5, 28},
    {"block_not_compiled_2d",
     kBase2D + "execution: {precision: float, kernel: 2.5d-register, block: [64, 4, 1]}\n",
     "is not compiled for stencil variant '2.5d-register' in 2D float (compiled: 256x1x0/pd6/vx2",
     5, 54},
    {"block_of_the_other_precision",
     kBase + "execution: {precision: double, kernel: 2.5d-tma, block: [512, 1, 32]}\n",
     "block 512x1x32 is not compiled for stencil variant '2.5d-tma' in 3D double", 5, 50},
    {"zero_time_block", kBase + "execution: {time_block: 0}\n",
     "execution.time_block: expected a positive integer, got '0'", 5, 25},
    {"decomposition_count", kBase + "execution: {decomposition: [2, 2]}\n",
     "execution.decomposition: expected 3 entries", 5, 28},
    {"bad_bool", kBase + "execution: {overlap: maybe}\n",
     "execution.overlap: expected true or false, got 'maybe'", 5, 22},
    {"unknown_backend", kBase + "execution: {backend: gpu}\n", "valid values: auto, cpu, cuda", 5,
     22},
    {"unknown_format", kBase + "output: {formats: [hdf5, csv]}\n",
     "output.formats[1]: unknown value 'csv'; valid values: hdf5, vtk", 5, 26},
    {"duplicate_format", kBase + "output: {formats: [vtk, vtk]}\n",
     "output.formats[1]: 'vtk' is listed twice", 5, 25},
    {"formats_not_list", kBase + "output: {formats: hdf5}\n",
     "output.formats: expected a list, got 'hdf5'", 5, 19},
    {"negative_every", kBase + "output: {every: -1}\n",
     "output.every: expected a non-negative integer", 5, 17},
    {"initial_none", kBase + "initial: {type: none}\n",
     "initial.type: unknown value 'none'; valid values: uniform, gaussian, box, sine", 5, 17},
    {"gaussian_missing_center", kBase + "initial: {type: gaussian, amplitude: 1, width: 0.1}\n",
     "missing required key 'initial.center'", 5, 10},
    {"gaussian_zero_width",
     kBase + "source: {type: gaussian, amplitude: 1, center: [0, 0, 0], width: 0}\n",
     "source.width: must be positive", 5, 66},
    {"key_for_other_shape", kBase + "initial: {type: uniform, amplitude: 1}\n",
     "unknown key 'amplitude' in 'initial'; valid keys: type, value", 5, 26},
    {"inverted_box",
     kBase + "initial: {type: box, value: 1, lower: [0.5, 0, 0], upper: [0.2, 1, 1]}\n",
     "initial.upper: upper corner must exceed the lower one on every axis", 5, 60},
    {"center_count",
     k2DHead + "grid: {cells: [8, 8]}\ntime: {end: 1}\n"
               "source: {type: gaussian, amplitude: 1, center: [0, 0, 0], width: 1}\n",
     "source.center: expected 2 entries", 5, 48},
    {"damping_above_one", kBase + "solver: {anderson: {depth: 3, damping: 2}}\n",
     "solver.anderson.damping: must be in (0, 1], got 2", 5, 40},
    {"unknown_method", kBase + "solver: {method: gauss-seidel}\n",
     "solver.method: unknown value 'gauss-seidel'; valid values: jacobi, anderson", 5, 18},
    {"duplicate_key", kBase + "name: u\n", "duplicate key 'name' (first given at line 1)", 5, 1},
    {"section_not_a_map", kBase + "material: 3\n", "material: expected a mapping, got '3'", 5, 11},
    {"deck_not_a_map", "- a\n- b\n", "the deck: expected a mapping of sections, got a list", 1, 1},
    {"bad_name", "name: a/b\nproblem: {type: heat, dimensions: 3}\n",
     "name: 'a/b' may contain only letters", 1, 7},
    {"empty_value", kBase + "material: {diffusivity: }\n",
     "material.diffusivity: expected a number, got an empty value", 5, 12},
    {"yaml_syntax_error", "name: t\nproblem: {type: heat\ngrid: [\n", "end of map flow not found",
     3, 5},
    {"empty_block_value", kBase + "material:\n  diffusivity:\nsource: {type: none}\n",
     "material.diffusivity: expected a number, got an empty value", 6, 3},
    {"empty_section_missing_type", kBase + "initial:\n", "missing required key 'initial.type'", 5,
     1},
    {"zero_anderson_every", kBase + "solver: {anderson: {every: 0}}\n",
     "solver.anderson.every: expected a positive integer, got '0'", 5, 28},
    {"negative_pre_sweeps", kBase + "solver: {multigrid: {pre_sweeps: -1}}\n",
     "solver.multigrid.pre_sweeps: expected a non-negative integer, got '-1'", 5, 34},
    {"too_many_post_sweeps", kBase + "solver: {multigrid: {post_sweeps: 65}}\n",
     "solver.multigrid.post_sweeps: 65 is too large (at most 64)", 5, 35},
    {"unknown_smoother", kBase + "solver: {multigrid: {smoother: gauss-seidel}}\n",
     "solver.multigrid.smoother: unknown value 'gauss-seidel'; valid values: jacobi, chebyshev", 5,
     32},
    {"unknown_cycle", kBase + "solver: {multigrid: {cycle: w}}\n",
     "solver.multigrid.cycle: unknown value 'w'; valid values: v, f, fmg", 5, 29},
    {"mixed_precision_explicit_heat", kBase + "execution: {precision: mixed}\n",
     "execution.precision: mixed solves multigrid's correction equation in float: it applies to "
     "solver.method multigrid or mg-cg (poisson) and to implicit heat steps, not to explicit "
     "heat steps",
     5, 24},
    {"mixed_precision_jacobi",
     "name: t\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "solver: {method: anderson}\nexecution: {backend: cpu, precision: mixed}\n",
     "not to solver.method anderson; use float or double", 5, 38},
    {"unknown_precision", kBase + "execution: {precision: half}\n",
     "execution.precision: unknown value 'half'; valid values: float, double, mixed", 5, 24},
    {"unknown_multigrid_key", kBase + "solver: {multigrid: {cylce: v}}\n",
     "unknown key 'cylce' in 'solver.multigrid' (did you mean 'cycle'?)", 5, 22},
    {"negative_coarse_sweeps", kBase + "solver: {multigrid: {coarse_sweeps: -2}}\n",
     "solver.multigrid.coarse_sweeps: expected a non-negative integer, got '-2'", 5, 37},
    {"no_sweeps", kBase + "solver: {multigrid: {pre_sweeps: 0, post_sweeps: 0}}\n",
     "solver.multigrid: pre_sweeps + post_sweeps must be at least 1", 5, 21},
    {"zero_coarse_tolerance", kBase + "solver: {multigrid: {coarse_tolerance: 0}}\n",
     "solver.multigrid.coarse_tolerance: must be in (0, 1], got 0", 5, 40},
    {"negative_agglomerate_below", kBase + "solver: {multigrid: {agglomerate_below: -1}}\n",
     "solver.multigrid.agglomerate_below: expected a non-negative integer", 5, 41},
    {"word_agglomerate_below", kBase + "solver: {multigrid: {agglomerate_below: some}}\n",
     "solver.multigrid.agglomerate_below: expected 'auto' or a non-negative integer", 5, 41},
    {"fused_not_boolean", kBase + "solver: {multigrid: {fused: 3}}\n",
     "solver.multigrid.fused: expected true or false, got '3'", 5, 29},
    {"unknown_scheme",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, scheme: backward-euler}\n",
     "time.scheme: unknown value 'backward-euler'; valid values: explicit, implicit-euler, "
     "crank-nicolson",
     4, 24},
    {"implicit_with_jacobi",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, scheme: implicit-euler}\nsolver: {tolerance: 1e-6, method: jacobi}\n",
     "solver.method: time.scheme implicit-euler solves each step by multigrid: expected "
     "'multigrid' or 'mg-cg', got 'jacobi'",
     5, 35},
    {"crank_nicolson_with_anderson",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, scheme: crank-nicolson}\nsolver:\n  method: anderson\n",
     "time.scheme crank-nicolson solves each step by multigrid", 6, 11},
    // output.catalyst: the form is checked before the build's Catalyst and the files.
    {"catalyst_unknown_key", kBase + "output: {catalyst: {script: a.py, evry: 2}}\n",
     "unknown key 'evry' in 'output.catalyst' (did you mean 'every'?)", 5, 35},
    {"catalyst_list_entry_unknown_key",
     kBase + "output:\n  catalyst:\n    - {script: a.py, every: 2, colour: red}\n",
     "unknown key 'colour' in 'output.catalyst[0]'", 7, 32},
    {"catalyst_every_zero", kBase + "output: {catalyst: [{script: a.py, every: 0}]}\n",
     "output.catalyst[0].every: expected a positive integer, got '0'", 5, 43},
    {"catalyst_every_negative", kBase + "output: {catalyst: {script: a.py, every: -3}}\n",
     "output.catalyst.every: expected a positive integer, got '-3'", 5, 42},
    {"catalyst_missing_script", kBase + "output: {catalyst: {every: 2}}\n",
     "missing required key 'output.catalyst.script'", 5, 20},
    {"catalyst_second_entry_missing_script",
     kBase + "output:\n  catalyst:\n    - {script: a.py}\n    - {every: 5}\n",
     "missing required key 'output.catalyst[1].script'", 8, 7},
    {"catalyst_not_a_mapping", kBase + "output: {catalyst: slice.py}\n",
     "output.catalyst: expected a mapping {script: file.py, every: N} or a list of them, got "
     "'slice.py'",
     5, 20},
    {"catalyst_entry_not_a_mapping", kBase + "output: {catalyst: [slice.py]}\n",
     "output.catalyst[0]: expected a mapping {script: file.py, every: N}, got 'slice.py'", 5, 21},
    {"catalyst_empty_script", kBase + "output: {catalyst: {script: ''}}\n",
     "output.catalyst.script: expected a non-empty string", 5, 29},
    // YAML a deck does not use (issue #31): tags other than !!str, a second document.
    {"python_object_tag", kBase + "material: {diffusivity: !!python/object:os.system 1}\n",
     "YAML tag '!!python/object:os.system' is not allowed", 5, 25},
    {"float_tag", kBase + "material: {diffusivity: !!float 2}\n",
     "YAML tag '!!float' is not allowed", 5, 25},
    {"local_tag_on_a_section", kBase + "material: !thing {diffusivity: 2}\n",
     "YAML tag '!thing' is not allowed", 5, 11},
    {"second_document", kBase + "---\nname: u\n", "a second YAML document", 6, 1},
    // yaml-cpp 0.7's LoadAll looped forever on this (found by scripts/fuzz.sh).
    {"leading_comma", "," + kBase, "invalid YAML at ',': a deck is a mapping of keys", 1, 1},
    // Regions that set no cell, origins that lose the field's precision, long names.
    {"box_source_outside_the_domain",
     kBase + "source: {type: box, value: 1, lower: [2, 0, 0], upper: [3, 1, 1]}\n",
     "source: the box [2, 3] on the x axis holds no cell centre", 5, 38},
    {"box_initial_between_centres",
     kBase + "initial: {type: box, value: 1, lower: [0, 0.07, 0], upper: [1, 0.18, 1]}\n",
     "initial: the box [0.07, 0.18] on the y axis holds no cell centre", 5, 39},
    {"origin_too_far_for_the_cells",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [64, 8, 8], origin: [1e17, 0, 0]}\ntime: {end: 0.01}\n",
     "grid.origin[0]: 1e+17 is too far from 0 for cells of size 0.015625", 3, 36},
    {"name_too_long",
     "name: "
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaa"
     "aaaaa\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\ntime: {end: 0.01}\n",
     "name: 201 characters is too long (at most 200", 1, 7},
    // Materials (docs/deck.md "Materials").
    {"material_zero_conductivity",
     kBase + "material: {conductivity: 0, density: 1, specific_heat: 1}\n",
     "material.conductivity: must be positive, got 0", 5, 26},
    {"material_nan_density",
     kBase + "material: {conductivity: 1, density: .nan, specific_heat: 1}\n",
     "material.density: expected a finite number, got '.nan'", 5, 38},
    {"material_inf_specific_heat",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: .inf}\n",
     "material.specific_heat: expected a finite number, got '.inf'", 5, 56},
    {"material_negative_density",
     kBase + "material: {conductivity: 1, density: -2, specific_heat: 1}\n",
     "material.density: must be positive, got -2", 5, 38},
    {"diffusivity_with_conductivity", kBase + "material: {diffusivity: 1, conductivity: 2}\n",
     "material: give either 'diffusivity' (k/(rho cp), today's meaning) or 'conductivity' with "
     "'density' and 'specific_heat', not both",
     5, 28},
    {"conductivity_then_diffusivity",
     kBase + "material: {conductivity: 2, density: 1, specific_heat: 1, diffusivity: 1}\n",
     "not both ('conductivity' and 'diffusivity' are given)", 5, 59},
    {"diffusivity_with_density", kBase + "material: {density: 3, diffusivity: 1}\n",
     "not both ('density' and 'diffusivity' are given)", 5, 24},
    {"density_without_conductivity", kBase + "material: {density: 1, specific_heat: 1}\n",
     "missing required key 'material.conductivity' ('density' needs it)", 5, 11},
    {"heat_missing_specific_heat", kBase + "material: {conductivity: 1, density: 1}\n",
     "missing required key 'material.specific_heat' (a heat problem with material.conductivity "
     "needs density and specific_heat",
     5, 11},
    {"materials_not_a_list", kBase + "materials: {region: {box: {}}}\n",
     "materials: expected a list of entries", 5, 12},
    {"materials_entry_not_a_map", kBase + "materials: [box]\n",
     "materials[0]: expected a mapping {region: {...}", 5, 13},
    {"material_region_missing", kBase + "materials: [{conductivity: 2}]\n",
     "missing required key 'materials[0].region'", 5, 13},
    {"material_region_unknown_kind",
     kBase + "materials: [{region: {sphre: {center: [0.5, 0.5, 0.5], radius: 0.2}}, "
             "conductivity: 2}]\n",
     "unknown region kind 'sphre' in 'materials[0].region' (did you mean 'sphere'?); valid "
     "kinds: box, sphere, cylinder, file",
     5, 23},
    {"material_region_two_kinds",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}, sphere: {center: "
             "[0.5, 0.5, 0.5], radius: 0.1}}, conductivity: 2}]\n",
     "materials[0].region: give one region kind, not both 'box' and 'sphere'", 5, 66},
    {"material_region_no_kind", kBase + "materials: [{region: {}, conductivity: 2}]\n",
     "materials[0].region: expected one region kind (box, sphere, cylinder, file)", 5, 22},
    {"material_region_not_a_map", kBase + "materials: [{region: box, conductivity: 2}]\n",
     "materials[0].region: expected a mapping with one region kind", 5, 22},
    {"material_unknown_entry_key",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, conductvity: "
             "2}]\n",
     "unknown key 'conductvity' in 'materials[0]' (did you mean 'conductivity'?)", 5, 67},
    {"material_unknown_box_key",
     kBase + "materials: [{region: {box: {lowr: [0, 0, 0], upper: [1, 1, 1]}}, conductivity: "
             "2}]\n",
     "unknown key 'lowr' in 'materials[0].region.box' (did you mean 'lower'?)", 5, 29},
    {"material_unknown_sphere_key",
     kBase + "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], raduis: 0.2}}, "
             "conductivity: 2}]\n",
     "unknown key 'raduis' in 'materials[0].region.sphere' (did you mean 'radius'?)", 5, 57},
    {"material_sets_nothing",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}}]\n",
     "materials[0]: sets no property (give conductivity, density or specific_heat)", 5, 13},
    {"material_region_no_cell_centre",
     kBase + "materials: [{region: {box: {lower: [0.13, 0, 0], upper: [0.18, 1, 1]}}, "
             "conductivity: 2}]\n",
     "materials[0].region.box: holds no cell centre of the grid", 5, 23},
    {"material_sphere_outside_grid",
     kBase + "materials:\n  - {region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, "
             "conductivity: 2}\n  - {region: {sphere: {center: [2, 2, 2], radius: 0.5}}, "
             "conductivity: 3}\n",
     "materials[1].region.sphere: holds no cell centre of the grid", 7, 15},
    {"material_box_inverted",
     kBase + "materials: [{region: {box: {lower: [0.5, 0, 0], upper: [0.2, 1, 1]}}, "
             "conductivity: 2}]\n",
     "materials[0].region.box.upper: upper corner must exceed the lower one on every axis, but "
     "upper[0] = 0.2 <= lower[0] = 0.5",
     5, 57},
    {"material_sphere_zero_radius",
     kBase + "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0}}, "
             "conductivity: 2}]\n",
     "materials[0].region.sphere.radius: must be positive, got 0", 5, 65},
    {"material_sphere_center_count",
     kBase + "materials: [{region: {sphere: {center: [0.5, 0.5], radius: 0.1}}, conductivity: "
             "2}]\n",
     "materials[0].region.sphere.center: expected 3 entries (one per dimension; "
     "problem.dimensions is 3), got 2",
     5, 40},
    {"material_region_zero_conductivity",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, conductivity: "
             "0}]\n",
     "materials[0].conductivity: must be positive, got 0", 5, 81},
    {"material_region_negative_density",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: 1}\nmaterials: [{region: "
             "{box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, density: -3}]\n",
     "materials[0].density: must be positive, got -3", 6, 76},
    {"material_region_nan_specific_heat",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: 1}\nmaterials: [{region: "
             "{box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, specific_heat: .nan}]\n",
     "materials[0].specific_heat: expected a finite number, got '.nan'", 6, 82},
    {"material_region_density_with_diffusivity",
     kBase + "material: {diffusivity: 2}\nmaterials: [{region: {box: {lower: [0, 0, 0], upper: "
             "[1, 1, 1]}}, density: 2}]\n",
     "materials[0].density: regions set density and specific_heat only when 'material' gives "
     "conductivity, density and specific_heat",
     6, 67},
    {"material_cylinder_axis_x_in_2d",
     kBase2D + "materials: [{region: {cylinder: {axis: x, center: [0.5, 0.5], radius: 0.1}}, "
               "conductivity: 2}]\n",
     "materials[0].region.cylinder.axis: a 2D cylinder is a disk: its axis must be z, got 'x'", 5,
     40},
    {"material_cylinder_center_count",
     kBase + "materials: [{region: {cylinder: {axis: y, center: [0.5, 0.5, 0.5], radius: 0.1}}, "
             "conductivity: 2}]\n",
     "materials[0].region.cylinder.center: expected 2 entries (the axis' position in x, z), got 3",
     5, 51},
    {"material_cylinder_unknown_axis",
     kBase + "materials: [{region: {cylinder: {axis: w, center: [0.5, 0.5], radius: 0.1}}, "
             "conductivity: 2}]\n",
     "materials[0].region.cylinder.axis: unknown value 'w'; valid values: x, y, z", 5, 40},
    {"material_cylinder_missing_axis",
     kBase + "materials: [{region: {cylinder: {center: [0.5, 0.5], radius: 0.1}}, conductivity: "
             "2}]\n",
     "missing required key 'materials[0].region.cylinder.axis'", 5, 33},
    {"material_box_2d_three_entries",
     kBase2D + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1]}}, conductivity: 2}]\n",
     "materials[0].region.box.lower: expected 2 entries (one per dimension; problem.dimensions "
     "is 2), got 3",
     5, 36},
    {"material_file_needs_property",
     kBase + "materials: [{region: {file: {path: k.h5, dataset: kappa}}}]\n",
     "missing required key 'materials[0].region.file.property' (the dataset's name 'kappa' is "
     "not a property: conductivity, density, specific_heat)",
     5, 29},
    {"material_file_unknown_property",
     kBase + "materials: [{region: {file: {path: k.h5, dataset: k, property: conductivty}}}]\n",
     "materials[0].region.file.property: unknown value 'conductivty' (did you mean "
     "'conductivity'?)",
     5, 64},
    {"material_file_unknown_key",
     kBase + "materials: [{region: {file: {path: k.h5, datset: conductivity}}}]\n",
     "unknown key 'datset' in 'materials[0].region.file' (did you mean 'dataset'?)", 5, 42},
    {"material_file_missing_path",
     kBase + "materials: [{region: {file: {dataset: conductivity}}}]\n",
     "missing required key 'materials[0].region.file.path'", 5, 29},
    {"material_file_with_value",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: 1}\nmaterials: [{region: "
             "{file: {path: k.h5, dataset: density}}, conductivity: 3}]\n",
     "materials[0].conductivity: a file region takes its values from its dataset", 6, 62},
    {"material_dt_above_cell_limit",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 0.01, dt: 0.002}\n"
     "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.2}}, conductivity: 10}]\n",
     "time.dt: 0.002 exceeds the stability limit dt_max = 0.000440", 4, 23},
    // Convective and heat-flux faces.
    {"convective_negative_h", kBase + "boundary: {x+: {type: convective, h: -1, ambient: 300}}\n",
     "boundary.x+.h: must not be negative, got -1", 5, 38},
    {"convective_missing_ambient", kBase + "boundary: {all: {type: convective, h: 5}}\n",
     "missing required key 'boundary.all.ambient'", 5, 17},
    {"convective_missing_h", kBase + "boundary: {y-: {type: convective, ambient: 5}}\n",
     "missing required key 'boundary.y-.h'", 5, 16},
    {"convective_misspelt", kBase + "boundary: {x-: {type: convection, h: 1, ambient: 0}}\n",
     "boundary.x-.type: unknown value 'convection' (did you mean 'convective'?)", 5, 23},
    {"convective_on_periodic_axis",
     kBase + "boundary: {all: {type: periodic}, x-: {type: convective, h: 1, ambient: 0}}\n",
     "boundary.x-: a convective face cannot lie on a periodic axis (x+ is periodic)", 5, 39},
    {"heat_flux_on_periodic_axis",
     kBase + "boundary: {z-: {type: periodic}, z+: {type: heat_flux, value: 5}}\n",
     "boundary.z+: a heat_flux face cannot lie on a periodic axis (z- is periodic)", 5, 38},
    {"heat_flux_wrong_key", kBase + "boundary: {x-: {type: heat_flux, flux: 5}}\n",
     "unknown key 'flux' in 'boundary.x-'", 5, 34},
};

INSTANTIATE_TEST_SUITE_P(Table, BadDeckTest, ::testing::ValuesIn(kBadDecks),
                         [](const ::testing::TestParamInfo<BadDeck>& info) {
                           return std::string(info.param.label);
                         });

TEST(Deck, YamlSyntaxErrorBecomesDeckError) {
  const DeckError e = parse_error("name: t\nproblem: {type: heat, dimensions: 3\n  grid: [1\n");
  EXPECT_EQ(e.file(), "test.yaml");
  EXPECT_GE(e.line(), 2);
  EXPECT_GE(e.column(), 1);
  EXPECT_FALSE(e.message().empty());
}

TEST(Deck, MissingFileNamesThePath) {
  const std::string path = "/nonexistent/dir/deck.yaml";
  try {
    load_deck(path);
    FAIL() << "missing file accepted";
  } catch (const DeckError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(e.column(), 0);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot read deck", 0), 0u) << e.what();
  }
}

TEST(Deck, DirectoryIsNotADeck) {
  try {
    load_deck(HEATSOLVE_SOURCE_DIR);
    FAIL() << "directory accepted";
  } catch (const DeckError& e) {
    EXPECT_NE(e.message().find("cannot read deck"), std::string::npos);
  }
}

TEST(Deck, NonRegularFileIsRefusedWithoutBlocking) {
  // A FIFO would block the read until someone writes to it.
  const fs::path fifo =
      fs::temp_directory_path() / ("heatsolve_deck_fifo_" + std::to_string(::getpid()));
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    load_deck(fifo.string());
    ADD_FAILURE() << "a FIFO accepted";
  } catch (const DeckError& e) {
    EXPECT_NE(e.message().find("not a regular file (a FIFO or pipe)"), std::string::npos)
        << e.what();
  }
  fs::remove(fifo);
}

TEST(Deck, StrTagAndAnOriginWithinPrecisionAreAccepted) {
  const Config cfg = parse(
      "name: !!str t\nproblem: {type: heat, dimensions: 3}\n"
      "grid: {cells: [64, 8, 8], origin: [6.4e6, 0, 0], length: [64, 1, 1]}\n"
      "time: {end: 0.01}\nsource: {type: box, value: 1, lower: [6.4e6, 0, 0], "
      "upper: [6.4000005e6, 1, 1]}\n---\n");
  EXPECT_EQ(cfg.name, "t");
  EXPECT_EQ(cfg.origin[0], 6.4e6);
}

TEST(Deck, DeepNestingSaysSo) {
  const DeckError e =
      parse_error(kBase + "x: " + std::string(5000, '[') + std::string(5000, ']') + "\n");
  EXPECT_NE(e.message().find("nested more than"), std::string::npos) << e.what();
}

TEST(Deck, DidYouMeanOnlyForCloseKeys) {
  const DeckError close =
      parse_error("name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cels: [8, 8, 8]}\n");
  EXPECT_NE(close.message().find("(did you mean 'cells'?)"), std::string::npos) << close.what();
  const DeckError far = parse_error(kBase + "output: {zzzzzzzz: 1}\n");
  EXPECT_EQ(far.message().find("did you mean"), std::string::npos) << far.what();
  EXPECT_NE(far.message().find("valid keys: directory, every, formats"), std::string::npos);
}

TEST(Deck, ErrorWhatFormat) {
  EXPECT_STREQ(DeckError("a.yaml", 3, 7, "bad").what(), "a.yaml:3:7: bad");
  EXPECT_STREQ(DeckError("a.yaml", 0, 0, "gone").what(), "a.yaml: gone");
}

}  // namespace
}  // namespace heatsolve
