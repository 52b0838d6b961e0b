// The op-spec parser (`--op`, suite files, results): a spec either parses into an op whose
// canonical spec parses back to the same op, or is refused with an InputError.
#include <stdexcept>

#include "attain/op.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attain;
  Op op;
  try {
    op = Op::parse(fuzz::text(data, size));
  } catch (const InputError&) {
    return 0;
  }
  if (!(op.flops() >= 0) || !(op.bytes() > 0))
    throw std::logic_error("flops or bytes out of range");
  const std::string spec = op.spec();
  if (Op::parse(spec) != op) throw std::logic_error("parse(spec()) differs: " + spec);
  return 0;
}
