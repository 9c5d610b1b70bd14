// diagnostics.csv (io/diagnostics_writer.hpp): the text (header, round-trippable values), the
// contract of write(), and restarts: after any sequence of kills, stops and restarts from any
// checkpoint the finished file equals the uninterrupted run's byte for byte; a damaged or
// foreign file is refused saying why; checkpoints record how far the file had come.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "app/restart.hpp"
#include "io/checkpoint.hpp"
#include "io/diagnostics_writer.hpp"
#include "tests/file_bytes.hpp"
#include "tests/temp_dir.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

const std::vector<std::string> kColumns{"step", "time", "min", "heat", "flow_x-", "probe_c"};

// The row of step s: values that need all 17 digits, and a negative zero.
std::vector<double> row(std::int64_t s) {
  const double t = 1e-3 * double(s);
  return {t, std::sin(double(s)) / 3.0, 1.0 / (1.0 + double(s)) * 1e300,
          s == 4 ? -0.0 : -std::exp(-double(s)), std::nextafter(1.0 + double(s), 2e9)};
}

// A run writing rows from `first` to `last` (inclusive) into `w`; `mark_at` records the marks
// a checkpoint at those steps would (after the row of that step).
std::vector<DiagnosticsMark> run_rows(DiagnosticsWriter& w, std::int64_t first, std::int64_t last,
                                      const std::vector<std::int64_t>& mark_at = {}) {
  std::vector<DiagnosticsMark> marks;
  for (std::int64_t s = first; s <= last; ++s) {
    w.write(s, row(s));
    for (std::int64_t m : mark_at)
      if (m == s) marks.push_back(*diagnostics_mark_through(s));
  }
  return marks;
}

// The uninterrupted run's file for steps 0..last.
std::string reference(std::int64_t last) {
  const TempDir dir;
  {
    DiagnosticsWriter w(dir.str(), kColumns);
    run_rows(w, 0, last);
    w.finalize();
  }
  return test_support::file_bytes(dir.path() / kDiagnosticsFile);
}

// A restart from `mark` in `dir`: chooses the source, continues to `last`, finalizes.
void restart_and_finish(const TempDir& dir, const DiagnosticsMark& mark, std::int64_t last) {
  const DiagnosticsResume r = choose_diagnostics_source(dir.str(), kColumns, mark);
  DiagnosticsWriter w(dir.str(), kColumns, r);
  EXPECT_EQ(w.mark(), mark);
  run_rows(w, mark.step + 1, last);
  w.finalize();
}

TEST(DiagnosticsWriter, TextIsHeaderAndRoundTrippableRows) {
  const TempDir dir;
  DiagnosticsWriter w(dir.str(), kColumns);
  run_rows(w, 0, 5);
  // Until finalize() only the partial file exists, complete up to its last row.
  EXPECT_FALSE(fs::exists(dir.path() / kDiagnosticsFile));
  const std::string partial = test_support::file_bytes(dir.path() / "diagnostics.csv.partial");
  w.finalize();
  const std::string text = test_support::file_bytes(dir.path() / kDiagnosticsFile);
  EXPECT_EQ(text, partial);
  EXPECT_FALSE(fs::exists(dir.path() / "diagnostics.csv.partial"));
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "step,time,min,heat,flow_x-,probe_c");
  for (std::int64_t s = 0; s <= 5; ++s) {
    ASSERT_TRUE(std::getline(in, line));
    std::istringstream cells(line);
    std::string cell;
    std::getline(cells, cell, ',');
    EXPECT_EQ(cell, std::to_string(s));
    const std::vector<double> want = row(s);
    for (double v : want) {
      ASSERT_TRUE(std::getline(cells, cell, ','));
      const double back = std::strtod(cell.c_str(), nullptr);
      EXPECT_EQ(back, v) << cell;
      EXPECT_EQ(std::signbit(back), std::signbit(v)) << cell;
    }
  }
  EXPECT_FALSE(std::getline(in, line));
  EXPECT_EQ(w.mark().rows, 6);
  EXPECT_EQ(w.mark().step, 5);
  EXPECT_EQ(w.mark().bytes, text.size());
  EXPECT_EQ(w.mark().digest, fnv1a64(text.data(), text.size()));
  const nlohmann::json j = w.summary();
  EXPECT_EQ(j["rows"], 6);
  EXPECT_EQ(j["last"]["step"], 5);
  EXPECT_EQ(j["last"]["heat"], row(5)[2]);
}

TEST(DiagnosticsWriter, ContractViolationsThrow) {
  const TempDir dir;
  EXPECT_THROW(DiagnosticsWriter(dir.str(), {"step"}), std::invalid_argument);
  EXPECT_THROW(DiagnosticsWriter(dir.str(), {"step", "a,b"}), std::invalid_argument);
  EXPECT_THROW(DiagnosticsWriter(dir.str(), {"step", ""}), std::invalid_argument);
  DiagnosticsWriter w(dir.str(), {"step", "x"});
  EXPECT_THROW(w.write(0, {1.0, 2.0}), std::logic_error);
  w.write(3, {1.0});
  EXPECT_THROW(w.write(3, {1.0}), std::logic_error);  // a row written twice
  EXPECT_THROW(w.write(2, {1.0}), std::logic_error);
  w.finalize();
  EXPECT_THROW(w.write(4, {1.0}), std::logic_error);
}

TEST(DiagnosticsWriter, NeverWritesThroughASymbolicLink) {
  const TempDir dir;
  fs::create_symlink(dir.path() / "elsewhere", dir.path() / "diagnostics.csv.partial");
  EXPECT_THROW(DiagnosticsWriter(dir.str(), kColumns), std::runtime_error);
  EXPECT_FALSE(fs::exists(dir.path() / "elsewhere"));
}

TEST(DiagnosticsWriter, MarksAreTheRowsUpToAStep) {
  EXPECT_FALSE(diagnostics_mark_through(10));  // no writer
  const TempDir dir;
  DiagnosticsWriter w(dir.str(), kColumns);
  const DiagnosticsMark start = *diagnostics_mark_through(0);
  EXPECT_EQ(start.rows, 0);
  EXPECT_EQ(start.bytes, diagnostics_header(kColumns).size());
  for (std::int64_t s : {0, 2, 4, 6}) w.write(s, row(s));
  const DiagnosticsMark m3 = *diagnostics_mark_through(3);  // the row of step 2
  EXPECT_EQ(m3.step, 2);
  EXPECT_EQ(m3.rows, 2);
  const std::string text = test_support::file_bytes(dir.path() / "diagnostics.csv.partial");
  EXPECT_EQ(m3.digest, fnv1a64(text.data(), m3.bytes));
  EXPECT_EQ(text.substr(0, m3.bytes).back(), '\n');
  EXPECT_EQ(diagnostics_mark_through(100)->step, 6);
  EXPECT_EQ(digest_hex(0x0123456789abcdefULL), "0123456789abcdef");
  EXPECT_EQ(*parse_digest_hex("0123456789abcdef"), 0x0123456789abcdefULL);
  EXPECT_FALSE(parse_digest_hex("0123"));
  EXPECT_FALSE(parse_digest_hex("0123456789ABCDEF"));
}

// ---- Restarts: byte for byte -----------------------------------------------------------------

TEST(DiagnosticsRestart, KilledRunContinuesFromItsCheckpoint) {
  const std::string want = reference(20);
  const TempDir dir;
  DiagnosticsMark at10;
  {
    DiagnosticsWriter w(dir.str(), kColumns);
    at10 = run_rows(w, 0, 13, {10}).front();
  }  // killed after the row of step 13: rows 11..13 are past the checkpoint
  restart_and_finish(dir, at10, 20);
  EXPECT_EQ(test_support::file_bytes(dir.path() / kDiagnosticsFile), want);
  EXPECT_FALSE(fs::exists(dir.path() / "diagnostics.csv.partial"));
  // The source moved aside stays until the run's own file is published; finish_restart
  // removes it.
  EXPECT_TRUE(fs::exists(dir.path() / "diagnostics.csv.restart-source"));
  Config cfg;
  cfg.output_directory = dir.str();
  cfg.name = "t";
  finish_restart(cfg);
  EXPECT_FALSE(fs::exists(dir.path() / "diagnostics.csv.restart-source"));
}

TEST(DiagnosticsRestart, StoppedRunContinuesItsPublishedFile) {
  const std::string want = reference(20);
  const TempDir dir;
  DiagnosticsMark at12;
  {
    DiagnosticsWriter w(dir.str(), kColumns);
    at12 = run_rows(w, 0, 12, {12}).front();
    w.finalize();  // a stop: checkpoint at 12, the file published
  }
  restart_and_finish(dir, at12, 20);
  EXPECT_EQ(test_support::file_bytes(dir.path() / kDiagnosticsFile), want);
}

TEST(DiagnosticsRestart, KillsDuringRestartsAndOlderCheckpoints) {
  const std::string want = reference(30);
  const TempDir dir;
  std::vector<DiagnosticsMark> marks;
  {
    DiagnosticsWriter w(dir.str(), kColumns);
    marks = run_rows(w, 0, 17, {5, 15});
  }  // killed at 17
  // Restart from the older checkpoint (5): rows 6..17 are dropped.
  {
    const DiagnosticsResume r = choose_diagnostics_source(dir.str(), kColumns, marks[0]);
    EXPECT_EQ(fs::path(r.source).filename(), "diagnostics.csv.restart-source");
    DiagnosticsWriter w(dir.str(), kColumns, r);
    const auto more = run_rows(w, 6, 22, {20});
    marks.push_back(more.front());
  }  // killed again at 22, after a checkpoint at 20
  // The newest checkpoint (20) continues the second run's file.
  {
    const DiagnosticsResume r = choose_diagnostics_source(dir.str(), kColumns, marks[2]);
    DiagnosticsWriter w(dir.str(), kColumns, r);
    run_rows(w, 21, 25);
  }  // killed at 25 without a checkpoint after 20
  restart_and_finish(dir, marks[2], 30);
  EXPECT_EQ(test_support::file_bytes(dir.path() / kDiagnosticsFile), want);
}

TEST(DiagnosticsRestart, AnInterruptedCopyFallsBackToTheSource) {
  const std::string want = reference(12);
  const TempDir dir;
  DiagnosticsMark at8;
  {
    DiagnosticsWriter w(dir.str(), kColumns);
    at8 = run_rows(w, 0, 9, {8}).front();
  }
  // The restart moved `.partial` aside and was killed while copying: its new `.partial` is
  // short. The next restart passes it over for `.restart-source`.
  const DiagnosticsResume r = choose_diagnostics_source(dir.str(), kColumns, at8);
  const std::string head = test_support::file_bytes(r.source).substr(0, at8.bytes / 2);
  std::ofstream(dir.path() / "diagnostics.csv.partial", std::ios::binary) << head;
  restart_and_finish(dir, at8, 12);
  EXPECT_EQ(test_support::file_bytes(dir.path() / kDiagnosticsFile), want);
}

TEST(DiagnosticsRestart, DamagedOrForeignFilesAreRefusedSayingWhy) {
  const TempDir dir;
  DiagnosticsMark at5;
  {
    DiagnosticsWriter w(dir.str(), kColumns);
    at5 = run_rows(w, 0, 6, {5}).front();
    w.finalize();
  }
  const fs::path file = dir.path() / kDiagnosticsFile;
  std::string text = test_support::file_bytes(file);
  // A changed digit within the checkpoint's rows.
  std::string damaged = text;
  damaged[at5.bytes - 3] = damaged[at5.bytes - 3] == '1' ? '2' : '1';
  std::ofstream(file, std::ios::binary | std::ios::trunc) << damaged;
  try {
    choose_diagnostics_source(dir.str(), kColumns, at5);
    ADD_FAILURE() << "a damaged file was continued";
  } catch (const DiagnosticsSourceError& e) {
    EXPECT_NE(std::string(e.what()).find("not those the checkpoint recorded"), std::string::npos)
        << e.what();
  }
  // Another deck's columns (output.probes changed).
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  std::vector<std::string> other = kColumns;
  other.back() = "probe_d";
  try {
    choose_diagnostics_source(dir.str(), other, at5);
    ADD_FAILURE() << "a file of other columns was continued";
  } catch (const DiagnosticsSourceError& e) {
    EXPECT_NE(std::string(e.what()).find("other columns"), std::string::npos) << e.what();
  }
  // Shorter than the checkpoint counts.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text.substr(0, at5.bytes - 1);
  EXPECT_THROW(choose_diagnostics_source(dir.str(), kColumns, at5), DiagnosticsSourceError);
  // None there at all: a new file, with a warning (the rows before are not in this directory).
  fs::remove(file);
  std::string warning;
  const DiagnosticsResume fresh = choose_diagnostics_source(dir.str(), kColumns, at5, &warning);
  EXPECT_TRUE(fresh.source.empty());
  EXPECT_NE(warning.find("starts after step 5"), std::string::npos) << warning;
  // The writer itself checks again what it continues.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << damaged;
  DiagnosticsResume forced;
  forced.source = file.string();
  forced.mark = at5;
  EXPECT_THROW(DiagnosticsWriter(dir.str(), kColumns, forced), std::runtime_error);
}

#ifdef HEATSOLVE_HAVE_HDF5
TEST(DiagnosticsRestart, CheckpointsRecordTheMark) {
  const TempDir dir;
  DiagnosticsWriter w(dir.str(), kColumns);
  run_rows(w, 0, 7);
  CheckpointState s;
  s.problem = "heat";
  s.deck_hash = "0123456789abcdef";
  s.deck_hashed = "{}";
  s.dims = 2;
  s.cells = {3, 2, 1};
  s.step = 6;
  s.block.count = s.cells;
  s.fields.push_back({"u", std::vector<unsigned char>(6 * sizeof(double), 0)});
  const std::string path = (dir.path() / "checkpoint_00000006.h5").string();
  write_checkpoint(path, s);
  const CheckpointState back = read_checkpoint_header(path);
  ASSERT_TRUE(back.has_diagnostics);
  EXPECT_EQ(back.diagnostics.step, 6);
  EXPECT_EQ(back.diagnostics.rows, 7);
  const std::string text = test_support::file_bytes(dir.path() / "diagnostics.csv.partial");
  EXPECT_EQ(back.diagnostics.digest, fnv1a64(text.data(), back.diagnostics.bytes));
  EXPECT_NO_THROW(verify_checkpoint(path, back));
  // Without a writer nothing is recorded.
  const TempDir other;
  { DiagnosticsWriter gone(other.str(), kColumns); }
  EXPECT_FALSE(diagnostics_mark_through(6));
}
#endif

}  // namespace
}  // namespace heatsolve
