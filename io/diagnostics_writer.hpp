// diagnostics.csv: one row of scalars per diagnostics step (output.diagnostics, docs/deck.md;
// columns: docs/user-guide.md "diagnostics.csv"). Rank 0 writes it; the values are the run's
// (global reductions, probes) and depend on the deck alone: nothing here looks at the
// terminal, -q or the wall clock.
//
// Text: a header line of the column names, then one line per row: the first column (the step
// or iteration) as an integer, every other value with {:.17g} (round-trips to the same double),
// separated by commas, "\n" line ends.
//
// Files and restarts. During the run the rows go to `diagnostics.csv.partial` (each row one
// write(2), so a killed process leaves every row it finished); finalize() renames it to
// `diagnostics.csv` (also when a run stops with a checkpoint). A checkpoint records how far
// the file had come at its step (its bytes and their FNV-1a 64 digest: DiagnosticsMark; the
// checkpoint writer asks diagnostics_mark_through(), which also fsyncs the file). A restart
// continues the first file among `diagnostics.csv.partial`, `.restart-source` and
// `diagnostics.csv` whose first `bytes` bytes carry that digest and the expected header
// (choose_diagnostics_source), copies exactly those bytes into its new `.partial`, and appends
// its rows: the rows after the checkpoint's step are dropped, the others kept byte for byte,
// so the finished file equals the uninterrupted run's after any sequence of kills, stops and
// restarts (given the same rows for the same steps).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/config.hpp"

namespace heatsolve {

inline constexpr const char* kDiagnosticsFile = "diagnostics.csv";

// The columns of cfg's diagnostics.csv, in order:
//   heat:    step, time, min, max, mean, heat, flow_<face>..., source_power, balance,
//            probe_<name>...
//   Poisson: iteration, min, max, mean, flow_<face>..., source_power, balance, probe_<name>...
// flow_<face> for each face that is not periodic, in the order x-, x+, y-, y+(, z-, z+); the
// probes in deck order. What each means: docs/user-guide.md.
std::vector<std::string> diagnostics_columns(const Config& cfg);

// The header line of `columns`: the names joined by commas, "\n".
std::string diagnostics_header(const std::vector<std::string>& columns);

// FNV-1a 64 over bytes, continued from `state` (start: kFnvOffsetBasis).
inline constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
std::uint64_t fnv1a64(const void* bytes, std::size_t n, std::uint64_t state = kFnvOffsetBasis);

// How far a diagnostics file had come: its first `bytes` bytes (the header and `rows` rows,
// the last of them at step `step`, -1 with none) have the FNV-1a 64 digest `digest`.
struct DiagnosticsMark {
  std::int64_t step = -1;
  std::int64_t rows = 0;
  std::uint64_t bytes = 0;
  std::uint64_t digest = kFnvOffsetBasis;
  bool operator==(const DiagnosticsMark& o) const {
    return step == o.step && rows == o.rows && bytes == o.bytes && digest == o.digest;
  }
};
// The digest as 16 lower-case hex digits (checkpoint attribute), and back (nullopt: malformed).
std::string digest_hex(std::uint64_t digest);
std::optional<std::uint64_t> parse_digest_hex(const std::string& hex);

// Where a restarted run's file starts: `bytes` bytes of `source` (the checkpoint's mark), or,
// with no source, a new file (the header alone).
struct DiagnosticsResume {
  std::string source;  // "" = a new file
  DiagnosticsMark mark;
};

// The restart's source: the first of `<directory>/diagnostics.csv.partial`,
// `diagnostics.csv.restart-source`, `diagnostics.csv` that holds at least mark.bytes bytes whose
// digest is mark.digest and whose first line is diagnostics_header(columns). A `.partial`
// chosen is renamed to `.restart-source` (the new writer creates `.partial`), and the returned
// source names it. None of the three present: a new file (`warning` says so: the rows up to
// the checkpoint are lost). Throws DiagnosticsSourceError, saying why each present file was
// passed over, when none fits.
struct DiagnosticsSourceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
DiagnosticsResume choose_diagnostics_source(const std::string& directory,
                                            const std::vector<std::string>& columns,
                                            const DiagnosticsMark& mark,
                                            std::string* warning = nullptr);

class DiagnosticsWriter {
 public:
  // Creates `<directory>/diagnostics.csv.partial` (replacing a file of that name, refusing a
  // symbolic link there) holding the header of `columns` (at least 2: the step or iteration
  // column, then the values; names of letters, digits, '_', '+', '-'), or, with
  // resume.source, exactly the first resume.mark.bytes bytes of that file (their digest and
  // header checked again). Becomes the process's writer for diagnostics_mark_through(). Throws
  // std::runtime_error (I/O, naming the file), std::invalid_argument (columns).
  DiagnosticsWriter(const std::string& directory, std::vector<std::string> columns,
                    const DiagnosticsResume& resume = {});
  // Without finalize() the `.partial` file stays, complete up to its last row (a restart
  // continues it); nothing appears under the final name.
  ~DiagnosticsWriter();
  DiagnosticsWriter(const DiagnosticsWriter&) = delete;
  DiagnosticsWriter& operator=(const DiagnosticsWriter&) = delete;

  // Appends the row of `step`: `values` are the columns after the first (columns().size() - 1
  // of them). Steps must increase strictly (std::logic_error otherwise: a row written twice,
  // or a restart that rewrote its checkpoint's row). Throws std::runtime_error on I/O errors.
  void write(std::int64_t step, const std::vector<double>& values);
  // fsync, rename `.partial` to `diagnostics.csv`, fsync the directory. Once; no write after.
  void finalize();

  const std::vector<std::string>& columns() const { return columns_; }
  // The file as far as written (rows include those copied on restart).
  const DiagnosticsMark& mark() const { return mark_; }
  // `diagnostics.csv` (the final name).
  const std::string& path() const { return final_; }
  // summary.json's `diagnostics` block: file, columns, rows, and `last`: the last row as
  // {column: value} (null before any row).
  nlohmann::json summary() const;
  // fsync of the `.partial` file (the rows written so far are on disk).
  void sync();

 private:
  std::string partial_, final_;
  std::vector<std::string> columns_;
  int fd_ = -1;
  DiagnosticsMark mark_;
  std::vector<DiagnosticsMark> marks_;  // after each row since the last checkpoint's mark
  std::vector<double> last_;            // the last row's values (summary)
  std::int64_t last_step_ = -1;
  bool synced_ = true, finalized_ = false;

  void append(const std::string& bytes);
  friend std::optional<DiagnosticsMark> diagnostics_mark_through(std::int64_t step);
};

// The process's diagnostics writer's mark of its rows up to `step` (the checkpoint of `step`
// records it), after an fsync of the file; nullopt when no writer exists (ranks other than 0,
// runs without diagnostics). Marks before the one returned are forgotten (checkpoints come in
// increasing steps).
std::optional<DiagnosticsMark> diagnostics_mark_through(std::int64_t step);

}  // namespace heatsolve
