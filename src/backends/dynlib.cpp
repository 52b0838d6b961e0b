#include "backends/dynlib.hpp"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

namespace attain::backends {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kDeepBind = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kDeepBind = false;
#else
constexpr bool kDeepBind = true;
#endif
#else
constexpr bool kDeepBind = true;
#endif

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

// One DynLib per candidate name, kept for the life of the process.
std::map<std::string, std::unique_ptr<DynLib>>& registry() {
  static auto* r = new std::map<std::string, std::unique_ptr<DynLib>>();
  return *r;
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer (GCC 12) crashes at exit ("Tracer caught signal 11") when it scans the
// dynamic TLS of OpenMP workers that ran code of a dlopen()ed library (BLIS with 2 threads).
// Not scanning thread-local storage avoids that; heap and stack roots are still scanned.
extern "C" const char* __lsan_default_options() {
  return "use_tls=0";
}
// Without the TLS scan, per-thread state that the comparison libraries' OpenMP runtimes keep
// only in thread-local storage looks leaked (as does glibc's per-thread dlerror() message);
// those allocations are theirs, not attain's.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libgomp.so\nleak:libblis.so\nleak:libopenblas\nleak:libdnnl.so\nleak:_dlerror_run\nleak:_dl_exception_create\n";
}
#endif

const char* DynLib::isolation() {
  return kDeepBind ? "RTLD_LOCAL|RTLD_DEEPBIND" : "RTLD_LOCAL (no DEEPBIND under AddressSanitizer)";
}

const DynLib* DynLib::open(std::initializer_list<const char*> candidates, std::string* why) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::string errors;
  for (const char* name : candidates) {
    auto it = registry().find(name);
    if (it != registry().end()) return it->second.get();
    int flags = RTLD_NOW | RTLD_LOCAL;
    if (kDeepBind) flags |= RTLD_DEEPBIND;
    void* h = dlopen(name, flags);
    if (!h) {
      const char* e = dlerror();
      errors += (errors.empty() ? "" : "; ") + std::string(e ? e : name);
      continue;
    }
    std::string path = name;
    link_map* lm = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) {
      std::error_code ec;  // resolve Debian's alternatives symlinks to the real file
      const auto real = std::filesystem::canonical(lm->l_name, ec);
      path = ec ? std::string(lm->l_name) : real.string();
    }
    auto lib = std::unique_ptr<DynLib>(new DynLib(h, std::move(path)));
    const DynLib* p = lib.get();
    registry().emplace(name, std::move(lib));
    return p;
  }
  if (why) *why = errors;
  return nullptr;
}

void* DynLib::symbol(const char* name, std::string* why) const {
  dlerror();
  void* p = dlsym(handle_, name);
  if (!p && why) *why = path_ + " does not export " + name;
  return p;
}

}  // namespace attain::backends
