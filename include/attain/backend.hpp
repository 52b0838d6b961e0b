// The backend interface every implementation (attain's kernels, vendor libraries,
// the reference) plugs into. Dispatch is data: backends are listed in registry order.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attain/op.hpp"
#include "attain/tensor.hpp"

namespace attain {

struct Support {
  bool ok = true;
  std::string reason;  // why not, when !ok
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

struct RunOptions {
  int threads = 1;
  int stages = 2;                    // tile pipeline depth (1 = no prefetch); attain only
  std::string schedule = "default";  // attain only: default | auto
  bool hot = false;                  // device backends: keep the device cache warm (no flush)
};

// One op bound to one tensor set, ready to run repeatedly. Construction may
// allocate workspace but must not read or transform the inputs (no pre-packing
// of weights: every run pays for what it needs, as a library call would).
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run() = 0;  // writes the set's outputs; throws on failure

  // Device kernels time themselves. Their inputs live on the device from construction on;
  // run() flushes the device cache (unless RunOptions::hot), records an event, launches,
  // records a second event, then copies the outputs back into the set. The harness times
  // such a kernel by last_device_seconds() (the time between the two events of the last
  // run()) instead of the host clock, and skips its host-cache flush.
  virtual bool device_timed() const { return false; }
  virtual double last_device_seconds() const { return 0.0; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Which library actually runs, with its version (recorded in results).
  virtual std::string version() const = 0;
  virtual Support supports(const Op& op) const = 0;
  // Applies the thread count etc. that the next prepare()d kernels run with.
  virtual std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions& opt) = 0;
  // Backends that name the same non-empty group run on one pool of threads in this process
  // and leave no threads spinning that would slow each other: attain bench times them in turn,
  // run by run (time_interleaved). Others are timed one after another, each alone.
  virtual std::string_view interleave_group() const { return {}; }
  // "NAME:VARIANT" backends (attain:auto): false with *why when there is no such variant.
  virtual bool set_variant(std::string_view variant, std::string* why) {
    *why = "this backend has no variants";
    (void)variant;
    return false;
  }
};

struct BackendInfo {
  std::string name;
  std::string description;
  // Returns nullptr with *why set when the backend cannot be loaded here.
  std::function<std::unique_ptr<Backend>(std::string* why)> make;
};

// Every backend compiled in, in preference order; "reference" is last.
const std::vector<BackendInfo>& backend_registry();
// Throws InputError for an unknown name (listing the known ones) or one that cannot load.
// "NAME:VARIANT" selects a variant (attain:auto = the attain backend with auto schedules).
std::unique_ptr<Backend> make_backend(std::string_view name);

}  // namespace attain
