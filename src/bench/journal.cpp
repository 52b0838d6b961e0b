// Results files written op by op, resumable, one writer at a time.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "attain/results.hpp"

namespace attain {

namespace {

// What must match for a results file to be finished by another run: the machine, the threads
// and every setting that changes a timing.
nlohmann::json settings_of(const ResultsFile& f) {
  // (A VM's model name can be as plain as "Intel(R) Xeon(R) Processor": the cache sizes tell
  // its generations apart.)
  const HostCeilings& c = f.machine.ceilings;
  nlohmann::json s = {{"cpu_model", f.machine.cpu_model},
                      {"cores", f.machine.cores},
                      {"threads", f.machine.threads},
                      {"caches", fmt::format("L1d {} KiB, L2 {} KiB, L3 {} MiB", c.l1d_bytes >> 10,
                                             c.l2_bytes >> 10, c.l3_bytes >> 20)}};
  for (const char* key : {"max_seconds", "hot", "seed", "stages", "schedule", "rounds", "ranks"})
    s[key] = f.config.is_object() && f.config.contains(key) ? f.config[key] : nlohmann::json();
  return s;
}

}  // namespace

ResultsJournal::ResultsJournal(std::filesystem::path path, ResultsFile header,
                               const std::vector<CatalogOp>& ops, bool resume)
    : path_(std::move(path)), ops_(ops), file_(std::move(header)) {
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
  const std::string lock = path_.string() + ".lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw InputError(
        fmt::format("cannot create the lock file '{}': {}", lock, std::strerror(errno)));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw InputError(fmt::format(
        "'{}' is being written by another attain process (it holds '{}'); wait for it, or write "
        "another file",
        path_.string(), lock));
  }
  file_.complete = false;
  file_.ops_total = ops_.size();
  file_.results.clear();
  if (!resume || !std::filesystem::exists(path_)) return;
  ResultsFile old;
  try {
    old = read_results(path_);
  } catch (const InputError& e) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw InputError(fmt::format("cannot resume: {} (move the file away to start over)", e.what()));
  }
  const nlohmann::json want = settings_of(file_), had = settings_of(old);
  std::string diff;
  for (const auto& [key, v] : want.items())
    if (had[key] != v)
      diff += fmt::format("{}{} {} (this run: {})", diff.empty() ? "" : ", ", key, had[key].dump(),
                          v.dump());
  std::set<std::string> specs;
  for (const auto& op : ops_) specs.insert(op.op.spec());
  std::string foreign;
  for (const auto& r : old.results)
    if (!specs.count(r.op.op.spec())) {
      foreign = r.op.op.spec();
      break;
    }
  if (!diff.empty() || !foreign.empty()) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw InputError(
        !diff.empty()
            ? fmt::format("cannot resume '{}': it was made with other settings: {}; run with the "
                          "same ones, or write another file",
                          path_.string(), diff)
            : fmt::format("cannot resume '{}': it holds {}, which this command does not run; "
                          "resume with the same op list, or write another file",
                          path_.string(), foreign));
  }
  for (auto& r : old.results) done_.emplace(r.op.op.spec(), r.backend);
  resumed_ = old.results.size();
  file_.results = std::move(old.results);
  // The checks of the runs before (their samples judge the results they measured), and the
  // libraries they loaded.
  file_.machine.checks.insert(file_.machine.checks.begin(), old.machine.checks.begin(),
                              old.machine.checks.end());
  for (const auto& [b, v] : old.machine.libraries) file_.machine.libraries.emplace(b, v);
  if (!old.created.empty()) file_.created = old.created;
}

ResultsJournal::~ResultsJournal() {
  if (lock_fd_ < 0) return;
  // Unlinked while still held: a process waiting on it then takes a lock on a file no one
  // else will open, and starts anew on the results file as it is.
  std::error_code ec;
  std::filesystem::remove(path_.string() + ".lock", ec);
  ::close(lock_fd_);
}

bool ResultsJournal::recorded(const CatalogOp& op, const std::string& backend) const {
  return done_.count({op.op.spec(), backend}) > 0;
}

void ResultsJournal::add(std::span<const Result> op_results) {
  for (const Result& r : op_results) {
    done_.emplace(r.op.op.spec(), r.backend);
    file_.results.push_back(r);
  }
  write();
}

void ResultsJournal::write() {
  std::set<std::string> ops_seen;
  for (const auto& r : file_.results) ops_seen.insert(r.op.op.spec());
  file_.ops_done = ops_seen.size();
  write_results(path_, file_);
}

void ResultsJournal::finish(bool complete, const std::vector<std::string>& backends) {
  std::map<std::string, std::size_t> op_at, backend_at;
  for (std::size_t i = 0; i < ops_.size(); ++i) op_at.emplace(ops_[i].op.spec(), i);
  for (std::size_t i = 0; i < backends.size(); ++i) backend_at.emplace(backends[i], i);
  auto rank = [&](const Result& r) {
    const auto o = op_at.find(r.op.op.spec());
    const auto b = backend_at.find(r.backend);
    return std::pair(o == op_at.end() ? ops_.size() : o->second,
                     b == backend_at.end() ? backends.size() : b->second);
  };
  std::stable_sort(file_.results.begin(), file_.results.end(),
                   [&](const Result& a, const Result& b) { return rank(a) < rank(b); });
  file_.complete = complete;
  write();
}

}  // namespace attain
