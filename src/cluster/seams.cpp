// The two places the simulator meets the rest of attain: the catalog (a model's ops) and the
// device database (a chip's ceilings). Everything else in src/cluster works on plain numbers.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "attain/catalog.hpp"
#include "attain/cluster.hpp"
#include "attain/device.hpp"

namespace attain::cluster {

ModelWork model_work(const ModelConfig& cfg, std::int64_t seq, DType dt) {
  ModelWork w;
  w.name = cfg.name;
  w.layers = cfg.layers, w.hidden = cfg.hidden, w.seq = seq;
  const std::int64_t head =
      cfg.head_dim > 0 ? cfg.head_dim : cfg.hidden / std::max<std::int64_t>(1, cfg.heads);
  w.kv_dim = (cfg.kv_heads > 0 ? cfg.kv_heads : cfg.heads) * head;
  w.params = cfg.params(), w.active_params = cfg.active_params();
  if (cfg.is_moe()) {
    w.experts = cfg.experts, w.experts_per_tok = cfg.experts_per_tok;
    w.moe_layers = cfg.layers - cfg.dense_layers();
    // Routed experts: gate, up and down matrices of expert_intermediate each.
    w.expert_params = static_cast<double>(w.moe_layers) * static_cast<double>(cfg.experts) * 3.0 *
                      static_cast<double>(cfg.hidden) *
                      static_cast<double>(cfg.expert_intermediate);
    w.expert_params = std::min(w.expert_params, w.params);
  }
  PassSpec pass;
  pass.phase = "prefill", pass.tokens = seq, pass.context = seq, pass.dtype = dt;
  for (const auto& op : model_ops(cfg, pass))
    w.forward.push_back({op.op, static_cast<double>(op.prov.count), op.prov.layer == kLmHeadRole});
  // Every family in the catalog has a gated MLP (SwiGLU or GeGLU). A MoE layer's activation
  // runs over its top-k experts' and the shared expert's widths, and it dispatches and combines
  // top-k copies of each token.
  const std::int64_t q_dim = cfg.heads * head;
  const double dense =
      nonmatrix_elems(cfg.hidden, q_dim, w.kv_dim, static_cast<double>(cfg.intermediate), true);
  double per_layer = dense;
  if (cfg.is_moe()) {
    const double moe =
        nonmatrix_elems(cfg.hidden, q_dim, w.kv_dim,
                        static_cast<double>(cfg.experts_per_tok * cfg.expert_intermediate +
                                            cfg.shared_intermediate),
                        true, static_cast<double>(cfg.experts_per_tok));
    per_layer = (dense * static_cast<double>(cfg.layers - w.moe_layers) +
                 moe * static_cast<double>(w.moe_layers)) /
                static_cast<double>(cfg.layers);
  }
  w.nonmatrix_per_layer = per_layer;
  w.nonmatrix_loss = static_cast<double>(cfg.vocab);
  return w;
}

Chip chip_from_device(const DeviceSpec& d, DType dt) {
  Chip c;
  c.id = d.id;
  c.peak_tflops = d.peak(dt);
  c.mem_bw_gbps = d.mem_bandwidth_gbps;
  c.mem_gb = d.mem_capacity_gb;
  c.scaleup_gbps = d.interconnect_gbps;
  c.training_efficiency = d.training_efficiency;
  const auto src = d.sources.find(fmt::format("peak_tflops.{}", dtype_name(dt)));
  if (src != d.sources.end()) c.peak_source = src->second;
  return c;
}

Chip load_chip(std::string_view device_id, DType dt, const std::vector<std::string>& assume_peaks) {
  const DeviceSpec d = load_device(device_id, assume_peaks);
  const Chip c = chip_from_device(d, dt);
  if (!(c.peak_tflops > 0)) {
    std::string have;
    for (const auto& [name, v] : d.peak_tflops) have += (have.empty() ? "" : ", ") + name;
    throw InputError(fmt::format(
        "device {} has no {} peak: {} (it lists: {}); pick one with --dtype, or state an "
        "assumption with --assume-peak (e.g. {}=fp8/2)",
        device_id, dtype_name(dt), d.peak_gap(dt), have, dtype_name(dt)));
  }
  return c;
}

}  // namespace attain::cluster
