// The tuning cache: round trip, lookups, corrupt and incompatible files, two processes saving
// at once, directory creation, write errors and lookup speed. Every test uses its own
// temporary directory; the user's ~/.cache is never touched.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "attain/tune_cache.hpp"

namespace fs = std::filesystem;
using attain::tune::Cache;
using attain::tune::Entry;
using attain::tune::Identity;
using attain::tune::Key;
using attain::tune::Trial;

namespace {

// A fresh directory, removed with everything in it at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "attain-tune-cache-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Sets (or unsets, with nullopt) an environment variable for one scope.
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(std::string n, std::optional<std::string> value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value)
      ::setenv(name.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  ~EnvVar() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

Identity test_identity() {
  return Identity{"0.1.0", "abcdef0123456789-g0123456789ab", "TestCPU", "avx2"};
}

Key gemm_key(std::int64_t m, std::int64_t n, std::int64_t k, int threads = 1,
             const std::string& dtype = "bf16") {
  Key key;
  key.op = "gemm";
  key.a_type = key.b_type = key.c_type = dtype;
  key.threads = threads;
  key.m = m, key.n = n, key.k = k;
  return key;
}

Entry make_entry(const Key& k, const std::string& best) {
  Entry e;
  e.key = k;
  e.best = best;
  e.trials = {Trial{best, 1.25e-5, 1.5e-5}, Trial{best + " alt", 2e-5, 3.0000000000000004e-5}};
  e.tuned_at = "2026-11-30T10:00:00Z";
  return e;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

void expect_same(const Entry& a, const Entry& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.best, b.best);
  EXPECT_EQ(a.tuned_at, b.tuned_at);
  ASSERT_EQ(a.trials.size(), b.trials.size());
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].schedule, b.trials[i].schedule);
    EXPECT_EQ(a.trials[i].estimate_s, b.trials[i].estimate_s);  // exact: JSON round-trips doubles
    EXPECT_EQ(a.trials[i].median_s, b.trials[i].median_s);
  }
}

// The number of entries in the file as written; it must parse under the right schema.
std::size_t file_entries(const fs::path& p) {
  const auto j = nlohmann::json::parse(slurp(p));  // throws (fails the test) on a torn file
  EXPECT_EQ(j.at("schema"), "attain.tuning/1");
  return j.at("entries").size();
}

void expect_valid_file(const fs::path& p, std::size_t entries) {
  EXPECT_EQ(file_entries(p), entries);
}

}  // namespace

TEST(TuneKey, CanonicalString) {
  Key k = gemm_key(8, 4096, 7168, 2);
  EXPECT_EQ(k.str(), "gemm a=bf16 b=bf16 c=bf16 NT t=2 m=8 n=4096 k=7168 items=1");
  k.op = "grouped_masked", k.a_type = "fp8", k.trans_b = 'N', k.items = 256;
  EXPECT_EQ(k.str(), "grouped_masked a=fp8 b=bf16 c=bf16 NN t=2 m=8 n=4096 k=7168 items=256");
}

TEST(TuneCache, CurrentIdentity) {
  const Identity id = attain::tune::current_identity("avx2");
  EXPECT_EQ(id.isa, "avx2");
  EXPECT_EQ(id.attain_version, ATTAIN_VERSION);
  // CMake passes the configure-time kernel hash (16 hex), plus "-g<commit>" inside a git checkout.
  EXPECT_TRUE(std::regex_match(id.build_id, std::regex("[0-9a-f]{16}(-g[0-9a-f]{7,40})?")))
      << id.build_id;
  EXPECT_TRUE(std::regex_search(id.cpu, std::regex("^\\S+ 0x[0-9a-f]{2,}/0x[0-9a-f]{2,} .+")))
      << id.cpu;
  EXPECT_EQ(attain::tune::current_identity("avx2"), id);  // stable
}

TEST(TuneCache, DefaultPath) {
  {
    EnvVar a("ATTAIN_TUNE_CACHE", "/x/y/t.json"), x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(Cache::default_path(), fs::path("/x/y/t.json"));
  }
  {
    EnvVar a("ATTAIN_TUNE_CACHE", std::nullopt), x("XDG_CACHE_HOME", "/xdg"), h("HOME", "/home/u");
    EXPECT_EQ(Cache::default_path(), fs::path("/xdg/attain/tuning.json"));
  }
  {
    EnvVar a("ATTAIN_TUNE_CACHE", std::nullopt), x("XDG_CACHE_HOME", std::nullopt),
        h("HOME", "/home/u");
    EXPECT_EQ(Cache::default_path(), fs::path("/home/u/.cache/attain/tuning.json"));
  }
}

TEST(TuneCache, MissingFileIsNotAWarning) {
  TempDir d;
  Cache c(d.path / "tuning.json", test_identity());
  EXPECT_EQ(c.load(), "");
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.find(gemm_key(1, 2, 3)), nullptr);
  EXPECT_FALSE(fs::exists(d.path / "tuning.json"));  // load never writes
}

TEST(TuneCache, RoundTrip) {
  TempDir d;
  const fs::path file = d.path / "tuning.json";
  Cache c(file, test_identity());
  Entry a = make_entry(gemm_key(8, 4096, 7168, 2), "mc=48 nc=4096 kc=256 split=n");
  Entry b = make_entry(gemm_key(32, 2112, 7168, 1, "fp8"), "direct");
  b.key.op = "grouped_contiguous", b.key.items = 8, b.key.trans_a = 'T';
  b.trials[1].median_s = std::nan("");  // a failed measurement survives as NaN (JSON null)
  Entry no_time = make_entry(gemm_key(1, 1, 1), "x");
  no_time.tuned_at.clear();
  c.put(a), c.put(b), c.put(no_time);
  EXPECT_FALSE(c.find(no_time.key)->tuned_at.empty());  // put() stamps it
  no_time.tuned_at = c.find(no_time.key)->tuned_at;
  c.save();
  expect_valid_file(file, 3);

  Cache r(file, test_identity());
  EXPECT_EQ(r.load(), "");
  ASSERT_EQ(r.size(), 3u);
  expect_same(*r.find(a.key), a);
  expect_same(*r.find(no_time.key), no_time);
  const Entry* rb = r.find(b.key);
  ASSERT_NE(rb, nullptr);
  EXPECT_EQ(rb->key, b.key);
  EXPECT_EQ(rb->trials[0].median_s, b.trials[0].median_s);
  EXPECT_TRUE(std::isnan(rb->trials[1].median_s));
  // entries() is sorted by key string.
  const auto all = r.entries();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_LT(all[0]->key.str(), all[1]->key.str());
  EXPECT_LT(all[1]->key.str(), all[2]->key.str());
  // put() replaces the entry with the same key.
  r.put(make_entry(a.key, "replaced"));
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(r.find(a.key)->best, "replaced");
  EXPECT_EQ(r.nearest(a.key)->best, "replaced");
}

TEST(TuneCache, FindIsExact) {
  Cache c("unused.json", test_identity());
  c.put(make_entry(gemm_key(8, 4096, 7168, 2), "x"));
  EXPECT_NE(c.find(gemm_key(8, 4096, 7168, 2)), nullptr);
  EXPECT_EQ(c.find(gemm_key(8, 4096, 7168, 1)), nullptr);          // threads
  EXPECT_EQ(c.find(gemm_key(8, 4096, 7168, 2, "fp32")), nullptr);  // dtype
  EXPECT_EQ(c.find(gemm_key(9, 4096, 7168, 2)), nullptr);          // shape
  Key t = gemm_key(8, 4096, 7168, 2);
  t.trans_b = 'N';
  EXPECT_EQ(c.find(t), nullptr);
  Key items = gemm_key(8, 4096, 7168, 2);
  items.items = 2;
  EXPECT_EQ(c.find(items), nullptr);
  Key c_type = gemm_key(8, 4096, 7168, 2);
  c_type.c_type = "fp32";
  EXPECT_EQ(c.find(c_type), nullptr);
}

TEST(TuneCache, Nearest) {
  Cache c("unused.json", test_identity());
  EXPECT_EQ(c.nearest(gemm_key(8, 4096, 7168)), nullptr);  // empty
  c.put(make_entry(gemm_key(8, 4096, 7168), "m8"));
  c.put(make_entry(gemm_key(64, 4096, 7168), "m64"));
  c.put(make_entry(gemm_key(8, 512, 7168), "n512"));

  EXPECT_EQ(c.nearest(gemm_key(8, 4096, 7168))->best, "m8");    // exact: distance 0
  EXPECT_EQ(c.nearest(gemm_key(16, 4096, 7168))->best, "m8");   // 1 from m8, 2 from m64
  EXPECT_EQ(c.nearest(gemm_key(32, 4096, 7168))->best, "m64");  // 2 from m8, 1 from m64
  EXPECT_EQ(c.nearest(gemm_key(8, 1024, 7168))->best, "n512");  // 1 from n512, 2 from m8
  EXPECT_EQ(c.nearest(gemm_key(512, 4096, 7168)), nullptr);     // 3 from m64: beyond the bound
  EXPECT_EQ(c.nearest(gemm_key(8, 4096, 1024)), nullptr);       // k 7x away
  EXPECT_EQ(c.nearest(gemm_key(16, 8192, 14336)), nullptr);     // 3 (one per dimension)
  // Exactly at the bound (2.0) is accepted.
  EXPECT_EQ(c.nearest(gemm_key(8, 4096, 28672))->best, "m8");

  // Never across threads, dtypes, transposes, op or items class.
  EXPECT_EQ(c.nearest(gemm_key(8, 4096, 7168, 2)), nullptr);
  EXPECT_EQ(c.nearest(gemm_key(8, 4096, 7168, 1, "fp8")), nullptr);
  Key t = gemm_key(8, 4096, 7168);
  t.trans_a = 'T';
  EXPECT_EQ(c.nearest(t), nullptr);
  Key op = gemm_key(8, 4096, 7168);
  op.op = "batched";
  EXPECT_EQ(c.nearest(op), nullptr);
  Key ct = gemm_key(8, 4096, 7168);
  ct.c_type = "fp32";
  EXPECT_EQ(c.nearest(ct), nullptr);

  // Items: the same power-of-two bucket matches ([4, 8) here), another does not, and 1 is its own.
  Key g = gemm_key(32, 2048, 7168);
  g.op = "grouped_masked", g.items = 4;
  c.put(make_entry(g, "g4"));
  Key g5 = g, g8 = g, g1 = g;
  g5.items = 5, g8.items = 8, g1.items = 1;
  ASSERT_NE(c.nearest(g5), nullptr);
  EXPECT_EQ(c.nearest(g5)->best, "g4");
  EXPECT_EQ(c.nearest(g8), nullptr);
  EXPECT_EQ(c.nearest(g1), nullptr);
}

TEST(TuneCache, NearestTieDoesNotDependOnOrder) {
  for (int order = 0; order < 2; ++order) {
    Cache c("unused.json", test_identity());
    Entry lo = make_entry(gemm_key(4, 1024, 1024), "m4");
    Entry hi = make_entry(gemm_key(16, 1024, 1024), "m16");
    if (order == 0)
      c.put(lo), c.put(hi);
    else
      c.put(hi), c.put(lo);
    // m=8 is 1 from both; the smaller key string wins ("m=16" < "m=4").
    EXPECT_EQ(c.nearest(gemm_key(8, 1024, 1024))->best, "m16") << "order " << order;
  }
}

// Every kind of damage: a warning naming the file, an empty cache, and the next save() writes a
// valid file that loads cleanly.
TEST(TuneCache, CorruptFilesWarnStartEmptyAndAreRewritten) {
  // A good file to damage.
  TempDir good_dir;
  const fs::path good = good_dir.path / "tuning.json";
  {
    Cache c(good, test_identity());
    c.put(make_entry(gemm_key(8, 4096, 7168), "x"));
    c.put(make_entry(gemm_key(16, 4096, 7168), "y"));
    c.save();
  }
  const std::string text = slurp(good);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"garbage", "\x01\x02 this is not json {{{"},
      {"empty", ""},
      {"truncated", text.substr(0, text.size() / 2)},
      {"not an object", "[1, 2, 3]"},
      {"wrong schema", replaced("attain.tuning/1", "attain.tuning/2")},
      {"no schema", replaced("\"schema\"", "\"schemaX\"")},
      {"m is a string", replaced("\"m\": 8", "\"m\": \"8\"")},
      {"m is a fraction", replaced("\"m\": 8", "\"m\": 8.5")},
      {"threads is a bool", replaced("\"threads\": 1", "\"threads\": true")},
      {"negative k", replaced("\"k\": 7168", "\"k\": -7168")},
      {"bad transpose", replaced("\"NT\"", "\"NX\"")},
      {"trials not an array", replaced("\"trials\": [", "\"trials\": {\"x\": [") + ""},
      {"median is a string", replaced("\"median_s\": 1.5e-05", "\"median_s\": \"fast\"")},
      {"entries not an array", replaced("\"entries\": [", "\"entries\": {\"a\": [")},
      {"identity not an object", replaced("\"identity\": {", "\"identity\": [{")},
  };
  for (const auto& [name, damaged] : cases) {
    SCOPED_TRACE(name);
    TempDir d;
    const fs::path file = d.path / "tuning.json";
    spit(file, damaged);
    Cache c(file, test_identity());
    const std::string w = c.load();
    EXPECT_NE(w.find(file.string()), std::string::npos) << w;
    EXPECT_EQ(c.last_warning(), w);
    EXPECT_EQ(c.size(), 0u);
    c.put(make_entry(gemm_key(1, 2, 3), "fresh"));
    ASSERT_NO_THROW(c.save());
    expect_valid_file(file, 1);  // the damaged entries are not merged back
    Cache r(file, test_identity());
    EXPECT_EQ(r.load(), "");
    EXPECT_EQ(r.size(), 1u);
    EXPECT_NE(r.find(gemm_key(1, 2, 3)), nullptr);
  }
}

TEST(TuneCache, UnreadablePathWarns) {
  TempDir d;
  fs::create_directory(d.path / "tuning.json");  // a directory where the file should be
  Cache c(d.path / "tuning.json", test_identity());
  EXPECT_NE(c.load(), "");
  EXPECT_EQ(c.size(), 0u);
}

TEST(TuneCache, IdentityMismatchWarnsAndStartsEmpty) {
  TempDir d;
  const fs::path file = d.path / "tuning.json";
  {
    Cache c(file, test_identity());
    c.put(make_entry(gemm_key(8, 4096, 7168), "old kernels"));
    c.save();
  }
  const Identity base = test_identity();
  std::vector<Identity> others(4, base);
  others[0].attain_version = "0.2.0";
  others[1].build_id = "ffffffffffffffff";
  others[2].cpu = "OtherCPU";
  others[3].isa = "avx512";
  const char* fields[] = {"attain_version", "build_id", "cpu", "isa"};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(fields[i]);
    Cache c(file, others[i]);
    const std::string w = c.load();
    EXPECT_NE(w.find("incompatible"), std::string::npos) << w;
    EXPECT_NE(w.find(fields[i]), std::string::npos) << w;
    EXPECT_EQ(c.size(), 0u);
    EXPECT_EQ(c.find(gemm_key(8, 4096, 7168)), nullptr);
  }
  // The next save with the new identity overwrites the file: the old entry is gone.
  Cache c(file, others[1]);
  c.load();
  c.put(make_entry(gemm_key(1, 1, 1), "new kernels"));
  c.save();
  Cache r(file, others[1]);
  EXPECT_EQ(r.load(), "");
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.find(gemm_key(8, 4096, 7168)), nullptr);
  Cache old(file, base);
  EXPECT_NE(old.load(), "");  // and the old build now sees an incompatible file
}

// Two objects on one file: each save keeps the other's entries, and an entry this object only
// loaded never overwrites a newer version written by someone else.
TEST(TuneCache, SaveMergesWithTheFile) {
  TempDir d;
  const fs::path file = d.path / "tuning.json";
  const Key x = gemm_key(8, 8, 8), y = gemm_key(16, 16, 16), z = gemm_key(32, 32, 32);
  Cache a(file, test_identity()), b(file, test_identity());
  a.put(make_entry(x, "x1"));
  a.save();
  a.load();  // a holds x1, not dirty
  b.load();
  b.put(make_entry(x, "x2"));  // b retunes x
  b.put(make_entry(y, "y"));
  b.save();
  a.put(make_entry(z, "z"));
  a.save();
  Cache r(file, test_identity());
  EXPECT_EQ(r.load(), "");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.find(x)->best, "x2");  // not the stale x1 that `a` had loaded
  EXPECT_EQ(r.find(y)->best, "y");
  EXPECT_EQ(r.find(z)->best, "z");
  EXPECT_EQ(a.size(), 3u);  // `a` adopted the file's entries
  EXPECT_EQ(a.find(x)->best, "x2");
  ASSERT_NE(a.nearest(y), nullptr);
  EXPECT_EQ(a.nearest(y)->best, "y");
  // Entries put here win over the file's.
  b.put(make_entry(z, "z-from-b"));
  b.save();
  r.load();
  EXPECT_EQ(r.find(z)->best, "z-from-b");
}

// Two child processes put 200 distinct entries each and save 20 times, while the parent saves
// 20 times too: the file must end with all 400 entries (no lost update) and always parse.
TEST(TuneCache, TwoProcessesSaveConcurrently) {
  TempDir d;
  const fs::path file = d.path / "sub" / "tuning.json";
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  auto key_of = [](int child, int i) { return gemm_key(1 + i, 64 * (child + 1), 128); };
  pid_t kids[2];
  for (int child = 0; child < 2; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      char byte;
      while (::read(go[0], &byte, 1) < 0 && errno == EINTR) {
      }
      int rc = 0;
      try {
        Cache c(file, test_identity());
        c.load();
        for (int round = 0; round < 20; ++round) {
          for (int i = 0; i < 10; ++i) {
            const int n = round * 10 + i;
            c.put(make_entry(key_of(child, n), fmt::format("child{}/{}", child, n)));
          }
          c.save();
        }
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);  // no gtest teardown in the child
    }
    kids[child] = pid;
  }
  ::close(go[0]);
  ::close(go[1]);  // start both children at once
  Cache parent(file, test_identity());
  std::size_t seen = 0;
  for (int round = 0; round < 20; ++round) {
    parent.save();
    // A reader never sees a torn file, and the file never shrinks (no save drops another's
    // entries). A child may have saved since, so the file may hold more than the parent.
    const std::size_t now = file_entries(file);
    EXPECT_GE(now, parent.size());
    EXPECT_GE(now, seen);
    seen = now;
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed: " << status;
  }
  expect_valid_file(file, 400);
  Cache r(file, test_identity());
  EXPECT_EQ(r.load(), "");
  ASSERT_EQ(r.size(), 400u);
  for (int child = 0; child < 2; ++child)
    for (int n = 0; n < 200; ++n) {
      const Entry* e = r.find(key_of(child, n));
      ASSERT_NE(e, nullptr) << child << " " << n;
      EXPECT_EQ(e->best, fmt::format("child{}/{}", child, n));
    }
  for (const auto& f : fs::directory_iterator(file.parent_path()))  // no temporary left behind
    EXPECT_EQ(f.path().string().find(".tmp."), std::string::npos) << f.path();
}

TEST(TuneCache, SaveCreatesTheDirectory) {
  TempDir d;
  const fs::path file = d.path / "a" / "b" / "c" / "tuning.json";
  Cache c(file, test_identity());
  EXPECT_EQ(c.load(), "");
  c.put(make_entry(gemm_key(1, 2, 3), "x"));
  c.save();
  EXPECT_TRUE(fs::is_regular_file(file));
  expect_valid_file(file, 1);
}

TEST(TuneCache, SaveToAnUnwritablePathThrowsNamingIt) {
  TempDir d;
  spit(d.path / "plainfile", "x");
  // A regular file where a directory should be: fails for root too (no permission bypass).
  const fs::path file = d.path / "plainfile" / "cache" / "tuning.json";
  Cache c(file, test_identity());
  EXPECT_NE(c.load(), "");  // ENOTDIR: unreadable, with a warning
  c.put(make_entry(gemm_key(1, 2, 3), "x"));
  try {
    c.save();
    FAIL() << "save() did not throw";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("Not a directory"), std::string::npos) << what;
  }
  // A directory where the file should be: the rename fails.
  const fs::path dir_file = d.path / "isdir";
  fs::create_directories(dir_file / "child");
  Cache c2(dir_file, test_identity());
  c2.put(make_entry(gemm_key(1, 2, 3), "x"));
  try {
    c2.save();
    FAIL() << "save() did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir_file.string()), std::string::npos) << e.what();
  }
  for (const auto& f : fs::directory_iterator(d.path))  // the temporary was removed
    EXPECT_EQ(f.path().string().find(".tmp."), std::string::npos) << f.path();
}

TEST(TuneCache, LookupIsFast) {
  Cache c("unused.json", test_identity());
  std::vector<Key> keys;
  for (int i = 0; i < 1000; ++i) {
    keys.push_back(gemm_key(1 + i % 64, 256 * (1 + i / 64), 7168, 1 + i % 2));
    c.put(make_entry(keys.back(), fmt::format("s{}", i)));
  }
  ASSERT_EQ(c.size(), 1000u);
  constexpr int kLookups = 200000;
  std::size_t found = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kLookups; ++i)
    found += c.find(keys[static_cast<std::size_t>(i) % 1000]) != nullptr;
  const double per_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      kLookups;
  EXPECT_EQ(found, static_cast<std::size_t>(kLookups));
  RecordProperty("find_us", std::to_string(per_us));
  std::printf("find(): %.3f us per lookup over a 1,000-entry cache (%d lookups)\n", per_us,
              kLookups);
  EXPECT_LT(per_us, 5.0);  // well under 1 us expected; 5 us stays robust under load and ASan
}
