// The on-disk tuning cache of the auto-scheduler: every measured schedule of every problem
// shape, keyed by what changes the answer. File format and guarantees: docs/tuning.md,
// "The tuning cache".
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace attain::tune {

// What changes the answer besides the shape. Written in the file header; a file whose identity
// differs is "incompatible": load() warns and starts empty, and the next save() overwrites it.
struct Identity {
  std::string attain_version;  // ATTAIN_VERSION
  std::string build_id;        // ATTAIN_KERNEL_BUILD_ID: hash of src/kernels/cpu/gemm/**,
                               // computed when CMake configures
  std::string cpu;  // vendor family/model brand, e.g. "AuthenticAMD 0x19/0x01 AMD EPYC ..."
  std::string isa;  // the kernel family used: "avx512", "avx2", "scalar"
  bool operator==(const Identity&) const = default;
};
// This build and this CPU (CPUID), with the kernel family `isa`.
Identity current_identity(std::string_view isa);

// One problem shape, as the scheduler sees it.
struct Key {
  std::string op;                      // "gemm", "batched", "grouped_masked", "grouped_contiguous"
  std::string a_type, b_type, c_type;  // dtype names: fp32 bf16 fp16 fp8
  char trans_a = 'N', trans_b = 'T';
  int threads = 1;
  std::int64_t m = 0, n = 0, k = 0, items = 1;  // items: batch or groups
  // Canonical, e.g. "gemm a=bf16 b=bf16 c=bf16 NT t=2 m=8 n=4096 k=7168 items=1".
  std::string str() const;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept;
};

struct Trial {            // one measured candidate
  std::string schedule;   // the schedule as text (opaque to the cache)
  double estimate_s = 0;  // the cost model's estimate
  double median_s = 0;    // measured (cold cache)
};

struct Entry {
  Key key;
  std::string best;           // the chosen schedule text
  std::vector<Trial> trials;  // every measured timing, not only the best
  std::string tuned_at;       // ISO-8601 UTC; put() fills it in when empty
};

// nearest() accepts an entry whose sum over (m, n, k) of |log2(entry / wanted)| is at most this:
// e.g. one dimension 4x away, or two dimensions 2x away each.
inline constexpr double kNearestMaxLog2Distance = 2.0;

// Not thread-safe: one object per thread. Any number of objects and processes may share a file.
class Cache {
 public:
  // $ATTAIN_TUNE_CACHE (the whole path) if set, else $XDG_CACHE_HOME/attain/tuning.json, else
  // $HOME/.cache/attain/tuning.json (the passwd home when HOME is unset).
  static std::filesystem::path default_path();

  Cache(std::filesystem::path file, Identity id);

  // Replaces the contents with the file's. Never throws for a missing, unreadable, corrupt,
  // truncated or incompatible file: returns a warning (empty when all is well; a missing file
  // is well) and starts empty. The caller decides whether to print it; last_warning() keeps it.
  std::string load();
  const std::string& last_warning() const { return warning_; }
  // What makes an entry unusable ("" if nothing does): entries it rejects are dropped when the
  // file is read (load(), and the re-read of save(), so the next save removes them from the
  // file), with one warning naming the first. The cache itself treats schedules as opaque
  // text; its user (tune::Scheduler) knows what a valid one is.
  using Validator = std::function<std::string(const Entry&)>;
  void validate_with(Validator v) { validator_ = std::move(v); }

  // Exact match; O(1) (hash map). nullptr on a miss.
  const Entry* find(const Key& k) const;
  // Same op, dtypes, transposes, threads and items class (items == 1, or the same power-of-two
  // bucket floor(log2(items))); the entry whose (m, n, k) is nearest in log space (sum of
  // |log2 ratio|, sizes below 1 count as 1), nullptr if none within kNearestMaxLog2Distance.
  // Ties go to the smaller key string, so the answer does not depend on insertion order.
  const Entry* nearest(const Key& k) const;
  // Replaces the entry with the same key.
  void put(Entry e);

  // Atomic and safe with concurrent processes: takes an exclusive flock on "<file>.lock",
  // re-reads the file, merges, writes "<file>.tmp.<pid>", fsyncs, renames it over the file,
  // fsyncs the directory, releases. Merge: entries put() on this object since its last
  // load()/save() win for equal keys; every other key takes the file's version (the file's
  // entries are adopted into this object too). An incompatible or corrupt file is overwritten.
  // Creates the directory. Throws std::runtime_error naming the path and the errno text when
  // it cannot write.
  void save();

  std::size_t size() const { return map_.size(); }
  std::vector<const Entry*> entries() const;  // sorted by key string
  const std::filesystem::path& path() const { return file_; }
  const Identity& identity() const { return id_; }

 private:
  void index(const Entry* e);
  void reindex();

  std::filesystem::path file_;
  Identity id_;
  std::string warning_;
  Validator validator_;
  std::unordered_map<Key, Entry, KeyHash> map_;
  std::unordered_set<Key, KeyHash> dirty_;  // put() since the last load()/save()
  // nearest(): entries grouped by everything but (m, n, k). Entry nodes of map_ never move.
  std::unordered_map<std::string, std::vector<const Entry*>> classes_;
};

}  // namespace attain::tune
