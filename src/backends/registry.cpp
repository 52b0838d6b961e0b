#include <fmt/format.h>

#include "attain/backend.hpp"
#include "backends/backends.hpp"

namespace attain {

const std::vector<BackendInfo>& backend_registry() {
  static const std::vector<BackendInfo> list = {
      {"attain", "attain's own CPU kernels (BLIS-style GEMM engine)", backends::make_attain},
      {"openblas", "OpenBLAS cblas_sgemm, loaded at run time (fp32 only)", backends::make_openblas},
#ifdef ATTAIN_HAVE_BLIS_HEADERS
      {"blis", "BLIS typed API (bli_sgemm), loaded at run time (fp32 only)", backends::make_blis},
#endif
#ifdef ATTAIN_HAVE_ONEDNN
      {"onednn", "oneDNN matmul primitive", backends::make_onednn},
#endif
      {"reference", "straightforward loops in fp64; what every backend is verified against",
       backends::make_reference},
  };
  return list;
}

std::unique_ptr<Backend> make_backend(std::string_view full) {
  const std::size_t colon = full.find(':');
  const std::string_view name = full.substr(0, colon);
  std::string known;
  for (const auto& b : backend_registry()) {
    if (b.name == name) {
      std::string why;
      auto be = b.make(&why);
      if (!be) throw InputError(fmt::format("backend '{}' cannot run here: {}", name, why));
      if (colon != std::string_view::npos && !be->set_variant(full.substr(colon + 1), &why))
        throw InputError(fmt::format("backend '{}': {}", full, why));
      return be;
    }
    known += (known.empty() ? "" : ", ") + b.name;
  }
  throw InputError(fmt::format("unknown backend '{}' (known: {})", name, known));
}

}  // namespace attain
