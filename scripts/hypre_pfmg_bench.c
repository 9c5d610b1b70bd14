/* HYPRE Struct PFMG on heatsolve's multigrid bench problem, for a CPU comparison in one run
 * (scripts/cpu_multigrid_vs_hypre.sh builds and runs it; HYPRE is not a heatsolve
 * dependency). -Lap u = f on the unit cube, n^3 cells, cell-centred 7-point stencil; Dirichlet
 * 0 on the faces (ghost = -inner: +1/h^2 on the diagonal) except an insulated x+ face (ghost =
 * inner: -1/h^2), f a Gaussian of amplitude 100 and width 0.1 at the centre: the deck
 * inputs/poisson_multigrid.yaml. Solved from u = 0 to ||r|| / ||f|| <= tol.
 *   mpirun -np P hypre_pfmg_bench N TOL [relax_type]   (ranks split z)
 * relax_type: PFMG's 0 Jacobi, 1 weighted Jacobi (default), 2 red/black Gauss-Seidel. */
#include <HYPRE_struct_ls.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 64;
  const double tol = argc > 2 ? atof(argv[2]) : 1e-8;
  const int relax = argc > 3 ? atoi(argv[3]) : 1;
  const double h = 1.0 / n, ih2 = 1.0 / (h * h);
  const int z0 = (int)((long)n * rank / size), z1 = (int)((long)n * (rank + 1) / size) - 1;
  int ilower[3] = {0, 0, z0}, iupper[3] = {n - 1, n - 1, z1};

  double t0 = MPI_Wtime();
  HYPRE_StructGrid grid;
  HYPRE_StructGridCreate(MPI_COMM_WORLD, 3, &grid);
  HYPRE_StructGridSetExtents(grid, ilower, iupper);
  HYPRE_StructGridAssemble(grid);
  int offsets[7][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
  HYPRE_StructStencil stencil;
  HYPRE_StructStencilCreate(3, 7, &stencil);
  for (int e = 0; e < 7; ++e) HYPRE_StructStencilSetElement(stencil, e, offsets[e]);
  HYPRE_StructMatrix A;
  HYPRE_StructMatrixCreate(MPI_COMM_WORLD, grid, stencil, &A);
  HYPRE_StructMatrixInitialize(A);
  const long cells = (long)n * n * (z1 - z0 + 1);
  double* values = malloc(sizeof(double) * 7 * cells);
  double* rhs = malloc(sizeof(double) * cells);
  double* x0 = calloc(cells, sizeof(double));
  long p = 0;
  for (int k = z0; k <= z1; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i, ++p) {
        double diag = 6 * ih2;
        double* v = values + 7 * p;
        const int nb[6][3] = {{i - 1, j, k}, {i + 1, j, k}, {i, j - 1, k},
                              {i, j + 1, k}, {i, j, k - 1}, {i, j, k + 1}};
        for (int e = 0; e < 6; ++e) {
          const int out = nb[e][0] < 0 || nb[e][0] >= n || nb[e][1] < 0 || nb[e][1] >= n ||
                          nb[e][2] < 0 || nb[e][2] >= n;
          v[1 + e] = out ? 0.0 : -ih2;
          if (out) diag += e == 1 ? -ih2 : ih2; /* x+ insulated, others Dirichlet 0 */
        }
        v[0] = diag;
        const double x = (i + 0.5) * h - 0.5, y = (j + 0.5) * h - 0.5, z = (k + 0.5) * h - 0.5;
        rhs[p] = 100.0 * exp(-(x * x + y * y + z * z) / (2 * 0.1 * 0.1));
      }
  int entries[7] = {0, 1, 2, 3, 4, 5, 6};
  HYPRE_StructMatrixSetBoxValues(A, ilower, iupper, 7, entries, values);
  HYPRE_StructMatrixAssemble(A);
  HYPRE_StructVector b, u;
  HYPRE_StructVectorCreate(MPI_COMM_WORLD, grid, &b);
  HYPRE_StructVectorCreate(MPI_COMM_WORLD, grid, &u);
  HYPRE_StructVectorInitialize(b);
  HYPRE_StructVectorInitialize(u);
  HYPRE_StructVectorSetBoxValues(b, ilower, iupper, rhs);
  HYPRE_StructVectorSetBoxValues(u, ilower, iupper, x0);
  HYPRE_StructVectorAssemble(b);
  HYPRE_StructVectorAssemble(u);
  const double t_assemble = MPI_Wtime() - t0;

  t0 = MPI_Wtime();
  HYPRE_StructSolver solver;
  HYPRE_StructPFMGCreate(MPI_COMM_WORLD, &solver);
  HYPRE_StructPFMGSetMaxIter(solver, 200);
  HYPRE_StructPFMGSetTol(solver, tol);
  HYPRE_StructPFMGSetRelChange(solver, 0);
  HYPRE_StructPFMGSetLogging(solver, 1);
  HYPRE_StructPFMGSetRelaxType(solver, relax);
  HYPRE_StructPFMGSetNumPreRelax(solver, 1);
  HYPRE_StructPFMGSetNumPostRelax(solver, 1);
  HYPRE_StructPFMGSetup(solver, A, b, u);
  const double t_setup = MPI_Wtime() - t0;
  t0 = MPI_Wtime();
  HYPRE_StructPFMGSolve(solver, A, b, u);
  const double t_solve = MPI_Wtime() - t0;
  int iters = 0;
  double rel = 0;
  HYPRE_StructPFMGGetNumIterations(solver, &iters);
  HYPRE_StructPFMGGetFinalRelativeResidualNorm(solver, &rel);
  if (rank == 0)
    printf("hypre PFMG n=%d ranks=%d relax=%d iterations=%d rel_residual=%.3e assemble=%.4f s "
           "setup=%.4f s solve=%.4f s setup+solve=%.4f s\n",
           n, size, relax, iters, rel, t_assemble, t_setup, t_solve, t_setup + t_solve);
  HYPRE_StructPFMGDestroy(solver);
  HYPRE_StructVectorDestroy(u);
  HYPRE_StructVectorDestroy(b);
  HYPRE_StructMatrixDestroy(A);
  HYPRE_StructStencilDestroy(stencil);
  HYPRE_StructGridDestroy(grid);
  free(values);
  free(rhs);
  free(x0);
  MPI_Finalize();
  return 0;
}
