// The device-file reader (data/devices/*.json, `--device FILE`): a file either gives a device
// with a roofline for each dtype it lists, or is refused with an InputError.
#include "attain/device.hpp"

#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attain;
  DeviceSpec d;
  try {
    d = parse_device(fuzz::text(data, size), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::fp8}) {
    try {
      (void)device_roofline(d, dt);
    } catch (const InputError&) {  // the device lists no peak for this dtype
    }
  }
  return 0;
}
