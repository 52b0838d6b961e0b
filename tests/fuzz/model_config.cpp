// The model-config reader (`--model FILE`, a Hugging Face config.json): a config either loads
// and yields the ops of a prefill and a decode pass, or is refused with an InputError.
#include "attain/catalog.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attain;
  try {
    const ModelConfig cfg = load_model_config(fuzz::input_file(fuzz::text(data, size)));
    (void)cfg.params(), (void)cfg.active_params();
    for (const char* phase : {"prefill", "decode"}) {
      PassSpec pass;
      pass.phase = phase;
      pass.tokens = 16;
      pass.context = 64;
      for (const CatalogOp& op : model_ops(cfg, pass)) (void)op.op.flops();
    }
  } catch (const InputError&) {
  }
  return 0;
}
