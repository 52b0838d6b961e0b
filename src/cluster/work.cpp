// A dense transformer's forward pass from its shape, for models the catalog has no config for.
#include <fmt/format.h>

#include "attain/cluster.hpp"
#include "attain/op.hpp"

namespace attain::cluster {

namespace {
WorkItem item(const Op& op, double count) {
  return {op, count, false};
}
Op gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dt) {
  Op o;
  o.kind = OpKind::gemm, o.dtype = dt, o.m = m, o.n = n, o.k = k;
  return o;
}
Op batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, DType dt) {
  Op o = gemm(m, n, k, dt);
  o.kind = OpKind::batched_gemm, o.batch = batch;
  return o;
}
}  // namespace

double nonmatrix_elems(std::int64_t hidden, std::int64_t q_dim, std::int64_t kv_dim, double act,
                       bool gated, double routed) {
  const double h = static_cast<double>(hidden);
  return 10 * h + 2.0 * static_cast<double>(q_dim + kv_dim) + (gated ? 3 : 2) * act +
         4 * routed * h;
}

ModelWork transformer_work(std::string name, std::int64_t layers, std::int64_t hidden,
                           std::int64_t ffn, std::int64_t heads, std::int64_t vocab,
                           std::int64_t seq, DType dt, bool gated, std::int64_t kv_heads) {
  if (kv_heads == 0) kv_heads = heads;
  if (layers <= 0 || hidden <= 0 || ffn <= 0 || heads <= 0 || vocab <= 0 || seq <= 0 ||
      hidden % heads != 0 || kv_heads < 0 || kv_heads > heads || heads % kv_heads != 0)
    throw InputError(fmt::format("bad transformer shape for {}", name));
  ModelWork w;
  w.name = std::move(name);
  const std::int64_t d = hidden / heads, kv = kv_heads * d;
  w.layers = layers, w.hidden = hidden, w.seq = seq, w.kv_dim = kv;
  const double L = static_cast<double>(layers), h = static_cast<double>(hidden),
               f = static_cast<double>(ffn);
  // Per layer, one sequence of `seq` tokens: (seq, h) rows against (n, k) weights.
  w.forward.push_back(item(gemm(seq, hidden + 2 * kv, hidden, dt), L));  // QKV
  w.forward.push_back(item(batched(heads, seq, seq, d, dt), L));         // Q K^T (full square)
  w.forward.push_back(item(batched(heads, seq, d, seq, dt), L));         // P V
  w.forward.push_back(item(gemm(seq, hidden, hidden, dt), L));           // output projection
  w.forward.push_back(item(gemm(seq, gated ? 2 * ffn : ffn, hidden, dt), L));  // up (+ gate)
  w.forward.push_back(item(gemm(seq, hidden, ffn, dt), L));                    // down
  w.forward.push_back({gemm(seq, vocab, hidden, dt), 1, true});                // LM head
  w.nonmatrix_per_layer = nonmatrix_elems(hidden, hidden, kv, static_cast<double>(ffn), gated);
  w.nonmatrix_loss = static_cast<double>(vocab);
  w.params = L * (2 * h * h + 2 * h * static_cast<double>(kv) + (gated ? 3 : 2) * h * f) +
             static_cast<double>(vocab) * h;
  w.active_params = w.params;
  return w;
}

}  // namespace attain::cluster
