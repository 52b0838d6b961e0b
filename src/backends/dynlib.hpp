// Run-time loading of comparison libraries that must not be linked together.
//
// OpenBLAS and BLIS both export cblas_sgemm and sgemm_: linked into one binary, one of them
// silently serves both names. Each is therefore dlopen()ed with RTLD_LOCAL (its symbols stay
// out of the global scope) and RTLD_DEEPBIND (its own internal calls bind to itself first),
// and reached only through the function pointers resolved here.
#pragma once

#include <initializer_list>
#include <string>

namespace attain::backends {

class DynLib {
 public:
  // Opens the first of `candidates` (file names or paths) that loads; nullptr with *why set
  // (every dlerror) when none does. Libraries stay loaded for the life of the process:
  // their worker threads may still be running, so they are never dlclose()d.
  static const DynLib* open(std::initializer_list<const char*> candidates, std::string* why);

  // Resolves `name`; nullptr with *why set when the library does not export it.
  void* symbol(const char* name, std::string* why) const;
  template <class Fn>
  bool resolve(Fn*& fn, const char* name, std::string* why) const {
    fn = reinterpret_cast<Fn*>(symbol(name, why));
    return fn != nullptr;
  }

  const std::string& path() const { return path_; }  // the file that was actually mapped
  // How the library is isolated ("RTLD_LOCAL|RTLD_DEEPBIND", or without DEEPBIND under
  // AddressSanitizer, whose runtime refuses it).
  static const char* isolation();

 private:
  DynLib(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace attain::backends
