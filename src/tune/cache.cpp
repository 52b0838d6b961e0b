// The tuning cache: one JSON file per user, shared by every process that tunes.
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "attain/device.hpp"
#include "attain/files.hpp"
#include "attain/op.hpp"
#include "attain/tune_cache.hpp"
#include "device/probe.hpp"

#ifndef ATTAIN_KERNEL_BUILD_ID
#define ATTAIN_KERNEL_BUILD_ID "unknown"
#endif

namespace attain::tune {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kSchema = "attain.tuning/1";

std::string errno_text(int err) {
  return std::strerror(err);
}

[[noreturn]] void fail(const std::string& what, const fs::path& p, int err) {
  throw std::runtime_error(
      fmt::format("tuning cache: cannot {} {}: {}", what, p.string(), errno_text(err)));
}

// Closes a file descriptor (and so releases its flock) on every path out.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const std::string& text, const fs::path& p) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail("write", p, errno);
    done += static_cast<std::size_t>(put);
  }
}

// ---- strict JSON reading: a wrong type is an error, never a silent conversion --------------

struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& field(const json& j, const char* name) {
  if (!j.is_object()) throw FormatError(fmt::format("expected an object holding '{}'", name));
  const auto it = j.find(name);
  if (it == j.end()) throw FormatError(fmt::format("missing field '{}'", name));
  return *it;
}

std::string get_string(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_string()) throw FormatError(fmt::format("field '{}' is not a string", name));
  return v.get<std::string>();
}

std::int64_t get_int(const json& j, const char* name, std::int64_t min) {
  const json& v = field(j, name);
  if (!v.is_number_integer()) throw FormatError(fmt::format("field '{}' is not an integer", name));
  const auto x = v.get<std::int64_t>();
  if (x < min) throw FormatError(fmt::format("field '{}' is {} (below {})", name, x, min));
  return x;
}

// Times: a number, or null for a non-finite value (JSON has no NaN; nlohmann writes null).
double get_seconds(const json& j, const char* name) {
  const json& v = field(j, name);
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) throw FormatError(fmt::format("field '{}' is not a number", name));
  return v.get<double>();
}

json key_to_json(const Key& k) {
  return json{{"op", k.op},
              {"a", k.a_type},
              {"b", k.b_type},
              {"c", k.c_type},
              {"trans", std::string{k.trans_a, k.trans_b}},
              {"threads", k.threads},
              {"m", k.m},
              {"n", k.n},
              {"k", k.k},
              {"items", k.items}};
}

Key key_from_json(const json& j) {
  Key k;
  k.op = get_string(j, "op");
  if (k.op.empty()) throw FormatError("field 'op' is empty");
  k.a_type = get_string(j, "a");
  k.b_type = get_string(j, "b");
  k.c_type = get_string(j, "c");
  const std::string t = get_string(j, "trans");
  auto ok = [](char c) { return c == 'N' || c == 'T'; };
  if (t.size() != 2 || !ok(t[0]) || !ok(t[1]))
    throw FormatError(fmt::format("field 'trans' is '{}' (expected two of N/T)", t));
  k.trans_a = t[0], k.trans_b = t[1];
  const std::int64_t threads = get_int(j, "threads", 1);
  if (threads > std::numeric_limits<int>::max()) throw FormatError("field 'threads' is too large");
  k.threads = static_cast<int>(threads);
  k.m = get_int(j, "m", 0), k.n = get_int(j, "n", 0), k.k = get_int(j, "k", 0);
  k.items = get_int(j, "items", 1);
  return k;
}

json entry_to_json(const Entry& e) {
  json trials = json::array();
  for (const Trial& t : e.trials)
    trials.push_back(
        json{{"schedule", t.schedule}, {"estimate_s", t.estimate_s}, {"median_s", t.median_s}});
  return json{{"key", key_to_json(e.key)},
              {"best", e.best},
              {"tuned_at", e.tuned_at},
              {"trials", std::move(trials)}};
}

Entry entry_from_json(const json& j) {
  Entry e;
  e.key = key_from_json(field(j, "key"));
  e.best = get_string(j, "best");
  e.tuned_at = get_string(j, "tuned_at");
  const json& trials = field(j, "trials");
  if (!trials.is_array()) throw FormatError("field 'trials' is not an array");
  for (const json& t : trials)
    e.trials.push_back(
        Trial{get_string(t, "schedule"), get_seconds(t, "estimate_s"), get_seconds(t, "median_s")});
  return e;
}

json identity_to_json(const Identity& id) {
  return json{{"attain_version", id.attain_version},
              {"build_id", id.build_id},
              {"cpu", id.cpu},
              {"isa", id.isa}};
}

Identity identity_from_json(const json& j) {
  return Identity{get_string(j, "attain_version"), get_string(j, "build_id"), get_string(j, "cpu"),
                  get_string(j, "isa")};
}

// Which identity fields differ, e.g. "build_id 'abc' vs 'def'".
std::string identity_diff(const Identity& file, const Identity& ours) {
  std::string out;
  auto one = [&](const char* name, const std::string& a, const std::string& b) {
    if (a == b) return;
    out += fmt::format("{}{} '{}' (this build: '{}')", out.empty() ? "" : ", ", name, a, b);
  };
  one("attain_version", file.attain_version, ours.attain_version);
  one("build_id", file.build_id, ours.build_id);
  one("cpu", file.cpu, ours.cpu);
  one("isa", file.isa, ours.isa);
  return out;
}

struct FileContents {
  std::vector<Entry> entries;
  std::string warning;  // empty: the file was missing or compatible and well formed
};

// Reads and checks the whole file; any fault gives a warning and no entries. Entries `fault`
// finds a reason against are dropped, with one warning for them all.
FileContents read_file(const fs::path& p, const Identity& id, const Cache::Validator& fault) {
  FileContents out;
  // Missing (ENOENT, not ENOTDIR: a file where a directory should be is a fault): no warning.
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 && errno == ENOENT) return out;
  std::string text;
  try {
    text = read_input_file(p, kMaxResultsBytes, "tuning cache");
  } catch (const InputError& e) {
    out.warning = fmt::format("{}; starting empty", e.what());
    return out;
  }
  try {
    const json j = json::parse(text);
    const std::string schema = get_string(j, "schema");
    if (schema != kSchema)
      throw FormatError(fmt::format("schema '{}', expected '{}'", schema, kSchema));
    const Identity file_id = identity_from_json(field(j, "identity"));
    if (file_id != id) {
      out.warning = fmt::format(
          "tuning cache {} is incompatible with this build ({}); starting empty, the next save "
          "overwrites it",
          p.string(), identity_diff(file_id, id));
      return out;
    }
    const json& entries = field(j, "entries");
    if (!entries.is_array()) throw FormatError("field 'entries' is not an array");
    std::size_t dropped = 0;
    std::string first;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      Entry e;
      try {
        e = entry_from_json(entries[i]);
      } catch (const FormatError& x) {
        throw FormatError(fmt::format("entry {}: {}", i, x.what()));
      }
      if (std::string why = fault ? fault(e) : std::string(); !why.empty()) {
        if (dropped++ == 0) first = fmt::format("{}: {}", e.key.str(), why);
        continue;
      }
      out.entries.push_back(std::move(e));
    }
    if (dropped > 0)
      out.warning = fmt::format(
          "tuning cache {}: {} entr{} dropped, never run (first: {}); `attain tune` measures {} "
          "again",
          p.string(), dropped, dropped == 1 ? "y" : "ies", first,
          dropped == 1 ? "its op" : "their ops");
  } catch (const std::exception& e) {  // json::exception (syntax, truncation) or FormatError
    out.entries.clear();
    out.warning =
        fmt::format("tuning cache {} is corrupt ({}); starting empty, the next save overwrites it",
                    p.string(), e.what());
  }
  return out;
}

// Groups keys that nearest() may substitute for each other: all but (m, n, k), with items
// reduced to its power-of-two bucket.
std::string class_of(const Key& k) {
  const int items_class = k.items <= 1 ? 0 : std::bit_width(static_cast<std::uint64_t>(k.items));
  return fmt::format("{} {} {} {} {}{} {} {}", k.op, k.a_type, k.b_type, k.c_type, k.trans_a,
                     k.trans_b, k.threads, items_class);
}

double log2_size(std::int64_t x) {
  return std::log2(static_cast<double>(std::max<std::int64_t>(x, 1)));
}

std::string cpu_identity() {
  const CpuFeatures& c = detected_cpu_features();
  return fmt::format("{} 0x{:02x}/0x{:02x} {}", c.vendor.empty() ? "unknown-vendor" : c.vendor,
                     c.family, c.model, cpu_model_name());
}

}  // namespace

// ---- Key ------------------------------------------------------------------------------------

std::string Key::str() const {
  return fmt::format("{} a={} b={} c={} {}{} t={} m={} n={} k={} items={}", op, a_type, b_type,
                     c_type, trans_a, trans_b, threads, m, n, k, items);
}

std::size_t KeyHash::operator()(const Key& k) const noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  auto mix = [&h](std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  const std::hash<std::string_view> hs;
  mix(hs(k.op)), mix(hs(k.a_type)), mix(hs(k.b_type)), mix(hs(k.c_type));
  mix(static_cast<std::uint64_t>(static_cast<unsigned char>(k.trans_a)) << 8 |
      static_cast<unsigned char>(k.trans_b));
  mix(static_cast<std::uint64_t>(k.threads));
  mix(static_cast<std::uint64_t>(k.m)), mix(static_cast<std::uint64_t>(k.n));
  mix(static_cast<std::uint64_t>(k.k)), mix(static_cast<std::uint64_t>(k.items));
  return static_cast<std::size_t>(h);
}

Identity current_identity(std::string_view isa) {
  return Identity{ATTAIN_VERSION, ATTAIN_KERNEL_BUILD_ID, cpu_identity(), std::string(isa)};
}

// ---- Cache ----------------------------------------------------------------------------------

fs::path Cache::default_path() {
  if (const char* p = std::getenv("ATTAIN_TUNE_CACHE"); p && *p) return fs::path(p);
  // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    return fs::path(x) / "attain" / "tuning.json";
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    if (const passwd* pw = ::getpwuid(::getuid())) home = pw->pw_dir;
  }
  if (home && *home) return fs::path(home) / ".cache" / "attain" / "tuning.json";
  return fs::temp_directory_path() / "attain" / "tuning.json";
}

Cache::Cache(fs::path file, Identity id) : file_(std::move(file)), id_(std::move(id)) {}

std::string Cache::load() {
  FileContents got = read_file(file_, id_, validator_);
  map_.clear(), dirty_.clear(), classes_.clear();
  for (Entry& e : got.entries) {
    Key k = e.key;
    map_.insert_or_assign(std::move(k), std::move(e));
  }
  reindex();
  warning_ = std::move(got.warning);
  return warning_;
}

const Entry* Cache::find(const Key& k) const {
  const auto it = map_.find(k);
  return it == map_.end() ? nullptr : &it->second;
}

const Entry* Cache::nearest(const Key& k) const {
  const auto it = classes_.find(class_of(k));
  if (it == classes_.end()) return nullptr;
  const double lm = log2_size(k.m), ln = log2_size(k.n), lk = log2_size(k.k);
  const Entry* best = nullptr;
  double best_d = kNearestMaxLog2Distance + 1e-9;  // the bound itself is in, despite rounding
  std::string best_str;
  for (const Entry* e : it->second) {
    const double d = std::abs(log2_size(e->key.m) - lm) + std::abs(log2_size(e->key.n) - ln) +
                     std::abs(log2_size(e->key.k) - lk);
    if (d > best_d) continue;
    if (best && d == best_d) {  // a tie: the smaller key string, independent of insertion order
      std::string s = e->key.str();
      if (s >= best_str) continue;
      best_str = std::move(s);
    } else {
      best_str = e->key.str();
    }
    best = e, best_d = d;
  }
  return best;
}

void Cache::index(const Entry* e) {
  classes_[class_of(e->key)].push_back(e);
}

void Cache::reindex() {
  classes_.clear();
  for (const auto& [k, e] : map_) index(&e);
}

void Cache::put(Entry e) {
  if (e.tuned_at.empty()) e.tuned_at = now_iso();
  dirty_.insert(e.key);
  const auto it = map_.find(e.key);
  if (it != map_.end()) {
    it->second = std::move(e);  // same node, same key: its index entry stays valid
    return;
  }
  Key k = e.key;
  const auto [at, inserted] = map_.emplace(std::move(k), std::move(e));
  index(&at->second);
}

std::vector<const Entry*> Cache::entries() const {
  std::vector<std::pair<std::string, const Entry*>> keyed;
  keyed.reserve(map_.size());
  for (const auto& [k, e] : map_) keyed.emplace_back(k.str(), &e);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const Entry*> out;
  out.reserve(keyed.size());
  for (const auto& [s, e] : keyed) out.push_back(e);
  return out;
}

void Cache::save() {
  const fs::path dir = file_.has_parent_path() ? file_.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("create the directory of", file_, ec.value());

  // Exclusive lock for the read-merge-write; released when `lock` closes.
  const fs::path lock_path = fs::path(file_.string() + ".lock");
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.fd < 0) fail("open the lock file", lock_path, errno);
  while (::flock(lock.fd, LOCK_EX) != 0) {
    if (errno != EINTR) fail("lock", lock_path, errno);
  }

  // Merge: keys put() here since the last load()/save() win; for every other key the file's
  // version (maybe newer, from another process) wins. A corrupt or incompatible file is dropped.
  FileContents on_disk = read_file(file_, id_, validator_);
  for (Entry& e : on_disk.entries) {
    if (dirty_.contains(e.key)) continue;
    const auto it = map_.find(e.key);
    if (it != map_.end()) {
      it->second = std::move(e);
    } else {
      Key k = e.key;
      const auto [at, inserted] = map_.emplace(std::move(k), std::move(e));
      index(&at->second);
    }
  }

  json entries = json::array();
  for (const Entry* e : this->entries()) entries.push_back(entry_to_json(*e));
  const std::string text =
      json{
          {"schema", kSchema}, {"identity", identity_to_json(id_)}, {"entries", std::move(entries)}}
          .dump(1) +
      "\n";

  const fs::path tmp = fs::path(fmt::format("{}.tmp.{}", file_.string(), ::getpid()));
  {
    Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.fd < 0) fail("create", tmp, errno);
    try {
      write_all(out.fd, text, tmp);
      if (::fsync(out.fd) != 0) fail("fsync", tmp, errno);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), file_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("rename a temporary file over", file_, err);
  }
  // The rename is durable once the directory is on disk; failing that is not worth an error.
  if (Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); d.fd >= 0) ::fsync(d.fd);
  dirty_.clear();
}

}  // namespace attain::tune
