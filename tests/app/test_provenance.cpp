// Provenance: SHA-256 against the FIPS 180-4 test vectors, the build's version and commit,
// and what summary.json records of a run (app/summary.hpp: collect_provenance).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "app/sha256.hpp"
#include "app/summary.hpp"
#include "app/version.hpp"
#include "io/deck.hpp"

namespace fs = std::filesystem;
using namespace heatsolve;

namespace {

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding needs a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the block and padding edges hash differently and stay 64 hex digits.
  for (std::size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    const std::string h = sha256_hex(std::string(n, 'x'));
    EXPECT_EQ(h.size(), 64u);
    EXPECT_NE(h, sha256_hex(std::string(n + 1, 'x')));
  }
}

TEST(BuildInfo, VersionAndCommit) {
  const BuildInfo& b = build_info();
  EXPECT_EQ(std::string(b.version), HEATSOLVE_VERSION);
  EXPECT_TRUE(std::regex_match(b.version, std::regex(R"(\d+\.\d+\.\d+)"))) << b.version;
  // In a git checkout 12 hex digits (and -dirty); "unknown" outside one.
  EXPECT_NE(std::string(b.commit), "");
  if (fs::exists(fs::path(HEATSOLVE_SOURCE_DIR) / ".git"))
    EXPECT_TRUE(std::regex_match(b.commit, std::regex(R"([0-9a-f]{12}(-dirty)?)"))) << b.commit;
  EXPECT_NE(std::string(b.compiler), "");
  const std::string v = version_report();
  EXPECT_EQ(v.rfind("heatsolve " + std::string(b.version) + "\n", 0), 0u) << v;
  EXPECT_NE(v.find(std::string("commit:   ") + b.commit), std::string::npos) << v;
  for (const char* line : {"compiler: ", "CUDA:     ", "MPI:      ", "HDF5:     "})
    EXPECT_NE(v.find(line), std::string::npos) << line << "\n" << v;
#ifdef HEATSOLVE_HAVE_MPI
  EXPECT_NE(mpi_library_version(), "");
#endif
}

TEST(Provenance, DeckHashesHostAndTime) {
  const fs::path deck =
      fs::temp_directory_path() / ("heatsolve_provenance_" + std::to_string(::getpid()) + ".yaml");
  const std::string text =
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [8, 8]}\ntime: {end: 0.01}\n";
  std::ofstream(deck, std::ios::binary) << text;
  const Config plain = load_deck(deck.string());
  const Config changed = load_deck(deck.string(), {"grid.cells=[16,16]"});
  const RunProvenance a = collect_provenance(deck.string(), {}, plain);
  const RunProvenance b = collect_provenance(deck.string(), {"grid.cells=[16,16]"}, changed);
  fs::remove(deck);
  EXPECT_EQ(a.deck_sha256, sha256_hex(text));  // the file's bytes, as sha256sum
  EXPECT_EQ(b.deck_sha256, a.deck_sha256);
  EXPECT_NE(b.effective_deck_sha256, a.effective_deck_sha256);  // the overrides change the deck
  EXPECT_EQ(a.effective_deck_sha256, sha256_hex(plain.deck.dump()));
  EXPECT_TRUE(a.overrides.empty());
  EXPECT_EQ(b.overrides, std::vector<std::string>{"grid.cells=[16,16]"});
  EXPECT_FALSE(a.host.empty());
  EXPECT_TRUE(std::regex_match(a.start_time, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << a.start_time;

  nlohmann::json s = nlohmann::json::object();
  add_provenance(s, b);
  EXPECT_EQ(s["version"], build_info().version);
  EXPECT_EQ(s["commit"], build_info().commit);
  EXPECT_EQ(s["deck_sha256"], a.deck_sha256);
  EXPECT_EQ(s["deck_overrides"], nlohmann::json::array({"grid.cells=[16,16]"}));
  EXPECT_EQ(s["effective_deck_sha256"], b.effective_deck_sha256);
  EXPECT_EQ(s["host"], a.host);
  EXPECT_EQ(s["start_time"], b.start_time);

  // A deck file that is gone by then says so instead of hashing nothing.
  EXPECT_EQ(collect_provenance((deck.string() + ".gone"), {}, plain).deck_sha256, "unavailable");
}

}  // namespace
