// The CSV import (`attain import`): rows either become results judged against a device's
// roofline, or are skipped with their line; the file is refused only as a whole.
#include <cmath>
#include <stdexcept>

#include "attain/device.hpp"
#include "attain/report.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attain;
  static const DeviceSpec dev = load_device("h100-sxm");
  ImportOutcome out;
  try {
    out = import_csv(fuzz::text(data, size), dev, ImportOptions{"fuzz", "fuzz.csv"});
  } catch (const InputError&) {
    return 0;
  }
  for (const Result& r : out.file.results)
    if (!std::isfinite(r.efficiency) || !(r.median_s > 0))
      throw std::logic_error("an imported row without a finite efficiency");
  return 0;
}
