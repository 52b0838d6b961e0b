// The tuning-cache reader: any file loads (a corrupt one with a warning, starting empty), and
// every entry it keeps passed the engine's schedule checks, so the engine can run it.
#include "attain/tune_cache.hpp"

#include <stdexcept>

#include "attain/tune.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attain::tune;
  // The seeds carry this identity, so that inputs reach the entries instead of stopping at
  // "incompatible with this build".
  const Identity id{"fuzz", "fuzz", "fuzz", "avx512"};
  Cache cache(attain::fuzz::input_file(attain::fuzz::text(data, size)), id);
  cache.validate_with([](const Entry& e) { return entry_fault(e); });
  (void)cache.load();
  for (const Entry* e : cache.entries()) {
    if (!entry_fault(*e).empty()) throw std::logic_error("a kept entry fails validation");
    (void)cache.nearest(e->key);
  }
  return 0;
}
