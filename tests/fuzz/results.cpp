// The results reader (`report`, `compare`, `bench --resume`): a file either loads, and writes
// back to a file that loads to the same results, or is refused with an InputError.
#include "attain/results.hpp"

#include <stdexcept>

#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attain;
  ResultsFile f;
  try {
    f = read_results(fuzz::input_file(fuzz::text(data, size)));
  } catch (const InputError&) {
    return 0;
  }
  const auto& p = fuzz::input_file("");
  write_results(p, f);
  if (read_results(p).results.size() != f.results.size())
    throw std::logic_error("results lost in a write and read back");
  return 0;
}
