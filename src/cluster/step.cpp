// One training step on a healthy cluster: roofline compute + non-matrix memory traffic + the
// busiest pipeline stage's excess + collectives + pipeline bubble.
//
// Rank order is [TP, CP, PP, DP] (TP fastest): TP groups sit inside a node when tp <= chips
// per node, CP peers share a node while tp * cp fits in one, pipeline neighbours only when
// tp * cp * pp does, and DP peers are on other nodes once a replica fills a node. EP groups are
// carved out of DP and stay inside a node while tp * ep fits in it. Megatron-style sequence
// parallelism: per layer and micro-batch the forward pass runs 2 all-gathers and 2 reduce-scatters
// of the activations over TP, the backward pass the same; MoE layers run dispatch + combine
// all-to-alls forward and backward.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attain/cluster.hpp"
#include "attain/op.hpp"

namespace attain::cluster {

double ModelWork::forward_flops() const {
  double f = 0;
  for (const auto& w : forward) f += w.op.flops() * w.count;
  return f;
}

namespace {

double weights_per_chip(const ModelWork& w, int tp, int pp, int ep) {
  const double dense = w.params - w.expert_params;
  return dense / (tp * pp) + w.expert_params / (static_cast<double>(tp) * pp * std::max(ep, 1));
}

}  // namespace

Parallelism choose_parallelism(const TrainingSetup& s) {
  Parallelism p = s.par;
  const bool moe = s.work.experts > 0;
  const int cpn = std::max(1, s.topo.chips_per_node);
  if (p.tp <= 0) p.tp = moe ? 1 : std::min(8, cpn);
  if (p.cp <= 0) p.cp = 1;
  if (p.ep <= 0) p.ep = moe ? static_cast<int>(std::min<std::int64_t>(cpn, s.work.experts)) : 1;
  if (p.pp <= 0) {
    p.pp = 1;
    const double budget = 0.25 * s.chip.mem_gb * 1e9;  // bf16 weights + bf16 gradients
    if (budget > 0) {
      while (4.0 * weights_per_chip(s.work, p.tp, p.pp, p.ep) > budget && 2 * p.pp <= s.work.layers)
        p.pp *= 2;
    }
  }
  if (p.virtual_stages <= 0)
    p.virtual_stages =
        p.pp > 1 ? static_cast<int>(std::clamp<std::int64_t>(s.work.layers / p.pp, 1, 4)) : 1;
  return p;
}

StepBreakdown step_time(const TrainingSetup& s) {
  if (s.chips <= 0) throw InputError("chips must be positive");
  if (s.work.forward.empty()) throw InputError("the model has no ops");
  if (s.work.layers <= 0 || s.work.hidden <= 0 || s.work.seq <= 0)
    throw InputError("the model needs layers, hidden size and sequence length");
  if (!(s.chip.peak_tflops > 0) || !(s.chip.mem_bw_gbps > 0))
    throw InputError(
        fmt::format("device {} lacks a peak or a memory bandwidth for this dtype", s.chip.id));
  if (s.global_batch <= 0) throw InputError("global batch must be positive");
  if (!(s.efficiency > 0 && s.efficiency <= 1)) throw InputError("efficiency must be in (0, 1]");
  if (!(s.overlap >= 0 && s.overlap <= 1)) throw InputError("overlap must be in [0, 1]");
  if (!(s.overlap_slowdown >= 0 && s.overlap_slowdown <= 1))
    throw InputError("overlap slowdown must be in [0, 1]");
  if (s.par.micro_batch <= 0) throw InputError("micro-batch must be positive");
  if (s.topo.pod_chips < 0) throw InputError("chips per pod must be 0 (one pod) or more");
  if (!(s.topo.oversubscription >= 1 && std::isfinite(s.topo.oversubscription)))
    throw InputError("oversubscription must be 1 (none) or more");

  const Parallelism p = choose_parallelism(s);
  const int tp = p.tp, cp = p.cp, pp = p.pp, ep = p.ep, v = p.virtual_stages;
  if (tp <= 0 || cp <= 0 || pp <= 0 || ep <= 0 || v <= 0)
    throw InputError("parallel sizes must be positive");
  if (cp > s.work.seq)
    throw InputError(fmt::format("CP {} exceeds the {} tokens of a sequence", cp, s.work.seq));
  // One model replica: TP x CP x PP chips (CP ranks hold the same weights, other tokens).
  const std::int64_t mp = static_cast<std::int64_t>(tp) * cp * pp;
  if (pp > s.work.layers)
    throw InputError(fmt::format("PP {} exceeds the {} layers", pp, s.work.layers));
  if (static_cast<std::int64_t>(pp) * v > s.work.layers)
    throw InputError(
        fmt::format("PP {} x {} virtual stages exceeds the {} layers", pp, v, s.work.layers));
  if (s.work.experts == 0 && ep != 1) throw InputError("EP > 1 needs a MoE model");
  // The largest DP the chips hold (a multiple of EP for MoE); the chips left over train nothing.
  const std::int64_t unit = mp * (s.work.experts > 0 ? ep : 1);
  if (s.chips < unit)
    throw InputError(fmt::format("{} chips are fewer than one TP {}{} x PP {}{} group ({} chips)",
                                 s.chips, tp, cp > 1 ? fmt::format(" x CP {}", cp) : "", pp,
                                 s.work.experts > 0 ? fmt::format(" x EP {}", ep) : "", unit));
  const std::int64_t dp = s.chips / unit * unit / mp;

  StepBreakdown b;
  b.tp = tp, b.cp = cp, b.pp = pp, b.ep = ep, b.dp = static_cast<int>(dp), b.virtual_stages = v;
  b.chips_used = dp * mp;
  b.chips_left = s.chips - b.chips_used;
  // The batch is the user's: spread over the DP ranks, the busiest rank's micro-batches set the
  // step. With scale_batch it is raised to fill every rank's last micro-batch.
  const std::int64_t mb = s.par.micro_batch;
  b.micro_batches = std::max<std::int64_t>(1, (s.global_batch + dp * mb - 1) / (dp * mb));
  b.global_batch = s.scale_batch ? b.micro_batches * dp * mb : s.global_batch;

  // Compute: each op as one chip runs it (a micro-batch's rows, split over TP) on the roofline,
  // at the efficiency measured for the nearest op, or at the setup's.
  const double peak = s.chip.peak_tflops * 1e12, bw = s.chip.mem_bw_gbps * 1e9;
  b.fwd_s = 0;
  double head_s = 0;  // the LM head's forward, one micro-batch, whole model
  for (const auto& w : s.work.forward) {
    OpStep o;
    o.op = chip_op(w, s.par.micro_batch, tp, cp);
    o.count = w.count;
    o.efficiency = s.efficiency;
    if (const MeasuredOp* near = nearest_measured(s.measured, o.op, &o.distance)) {
      o.efficiency = std::min(1.0, near->efficiency);
      o.measured = near->op.spec();
      ++b.ops_measured;
    }
    const double t_compute = o.op.flops() / peak;
    const double roof =
        w.attention() && s.fused_attention ? t_compute : std::max(t_compute, o.op.bytes() / bw);
    o.fwd_s = w.count * roof / o.efficiency / pp;
    b.fwd_s += o.fwd_s;
    if (w.head) head_s += o.fwd_s * pp;
    b.ops.push_back(std::move(o));
  }
  const double passes = s.recompute ? 4.0 : 3.0;  // forward, backward (2x), recomputation
  b.bwd_s = (passes - 1) * b.fwd_s;
  const double fb = b.fwd_s + b.bwd_s;
  const double m = static_cast<double>(b.micro_batches);
  b.compute_s = m * fb;

  // Non-matrix ops: their elements through memory at the bandwidth and the setup's efficiency,
  // a micro-batch's tokens over CP, TP-split (sequence parallelism splits the norms and adds,
  // the heads and the MLP's width split the rest); the backward moves twice the forward.
  const double layers = static_cast<double>(s.work.layers);
  const double elem_s = static_cast<double>(s.par.micro_batch) * static_cast<double>(s.work.seq) /
                        (static_cast<double>(cp) * tp) * s.act_bytes / bw / s.efficiency;
  const double layer_nm = s.work.nonmatrix_per_layer * elem_s,
               loss_nm = s.work.nonmatrix_loss * elem_s;
  b.nonmatrix_fwd_s = (layers * layer_nm + loss_nm) / pp;
  const double nfb = passes * b.nonmatrix_fwd_s;
  b.nonmatrix_s = m * nfb;

  // Stages: the layers split into contiguous blocks, the LM head and the loss after the last
  // layer. The pipeline runs at its busiest stage's pace; the best split gives the last stage k
  // layers (each stage holds at least one layer per virtual stage).
  const double t_layer = (b.fwd_s * pp - head_s) / layers + layer_nm, t_head = head_s + loss_nm;
  const double mean = (layers * t_layer + t_head) / pp;
  double busiest = layers * t_layer + t_head;
  b.stage_layers = b.last_layers = s.work.layers;
  if (pp > 1) {
    busiest = std::numeric_limits<double>::infinity();
    for (std::int64_t k = v; k <= s.work.layers - static_cast<std::int64_t>(pp - 1) * v; ++k) {
      const std::int64_t others = (s.work.layers - k + pp - 2) / (pp - 1);
      const double load = std::max(static_cast<double>(others) * t_layer,
                                   static_cast<double>(k) * t_layer + t_head);
      if (load <= busiest) busiest = load, b.stage_layers = std::max(others, k), b.last_layers = k;
    }
  }
  b.stage_load = mean > 0 ? std::max(1.0, busiest / mean) : 1.0;
  const double work_fb = fb + nfb, busiest_fb = b.stage_load * work_fb;
  b.imbalance_s = m * (busiest_fb - work_fb);
  b.bubble_s = static_cast<double>(pp - 1) / v * busiest_fb;

  const int cpn = std::max(1, s.topo.chips_per_node);
  const Link intra{s.topo.intra_gbps > 0 ? s.topo.intra_gbps : s.chip.scaleup_gbps,
                   s.topo.intra_latency_us};
  const Link inter{s.topo.inter_gbps, s.topo.inter_latency_us};
  if (!(intra.gbps > 0) || !(inter.gbps > 0)) throw InputError("link bandwidths must be positive");
  const Link& tp_link = tp <= cpn ? intra : inter;
  const Link& cp_link = static_cast<std::int64_t>(tp) * cp <= cpn ? intra : inter;
  const Link& pp_link = mp <= cpn ? intra : inter;
  const Link& ep_link = static_cast<std::int64_t>(tp) * ep <= cpn ? intra : inter;
  const Link& dp_link = mp * dp <= cpn ? intra : inter;

  const double layers_here = static_cast<double>(s.work.layers) / pp;
  const double tokens_here = static_cast<double>(mb) * s.work.seq / cp;  // one micro-batch
  const double act = tokens_here * s.work.hidden * s.act_bytes;
  const double tp_mb =
      layers_here * (4 * allgather_s(act, tp, tp_link) + 4 * reduce_scatter_s(act, tp, tp_link)) +
      (s.recompute ? layers_here * 2 * allgather_s(act, tp, tp_link) : 0.0);
  const double moe_here = static_cast<double>(s.work.moe_layers) / pp;
  const double a2a_bytes = tokens_here * s.work.experts_per_tok * s.work.hidden * s.act_bytes / tp;
  const double ep_mb = moe_here * 4 * alltoall_s(a2a_bytes, ep, ep_link);
  const double pp_msg = act / tp;
  const double pp_mb = pp > 1 ? 2.0 * v * p2p_s(pp_msg, pp_link) : 0.0;
  // CP (Llama 3's all-gather form): per layer the forward all-gathers the sequence's K and V
  // (this TP rank's heads), the backward reduce-scatters their gradients.
  const double kv_bytes = static_cast<double>(mb) * s.work.seq * 2.0 *
                          static_cast<double>(s.work.kv_dim > 0 ? s.work.kv_dim : s.work.hidden) *
                          s.act_bytes / tp;
  const double cp_mb =
      cp > 1 ? layers_here *
                   (allgather_s(kv_bytes, cp, cp_link) + reduce_scatter_s(kv_bytes, cp, cp_link) +
                    (s.recompute ? allgather_s(kv_bytes, cp, cp_link) : 0.0))
             : 0.0;
  b.tp_comm_s = m * tp_mb, b.cp_comm_s = m * cp_mb, b.ep_comm_s = m * ep_mb,
  b.pp_comm_s = m * pp_mb;

  auto allreduce = [&](double bytes, std::int64_t ranks, const Link& l) {
    const int n = static_cast<int>(ranks);
    switch (s.allreduce) {
      case AllReduce::ring:
        return ring_allreduce_s(bytes, n, l);
      case AllReduce::tree:
        return tree_allreduce_s(bytes, n, l);
      case AllReduce::best:
        break;
    }
    return std::min(ring_allreduce_s(bytes, n, l), tree_allreduce_s(bytes, n, l));
  };
  // A DP group that spans pods reduces hierarchically: reduce-scatter among its members in a
  // pod at the NIC's bandwidth, all-reduce the 1 / k shard across the pods on the oversubscribed
  // tier, all-gather in the pod again. A group's CP members lie TP chips apart inside one block
  // of TP x CP x PP chips and its DP members `stride` chips apart (that block; x EP for expert
  // weights), so a pod holds k = (CP members in it) x (blocks in it) of them.
  const Link across{inter.gbps / s.topo.oversubscription, inter.latency_us};
  auto dp_allreduce = [&](double bytes, std::int64_t ranks, std::int64_t stride) {
    if (!(bytes > 0)) return 0.0;  // no expert weights: no second reduction
    const std::int64_t pod = s.topo.pod_chips;
    if (&dp_link != &inter || pod <= 0 || b.chips_used <= pod || ranks <= 1)
      return allreduce(bytes, ranks, dp_link);
    const std::int64_t cp_here =
        static_cast<std::int64_t>(tp) * cp <= pod ? cp : std::max<std::int64_t>(1, pod / tp);
    const std::int64_t k =
        std::clamp<std::int64_t>(cp_here * std::max<std::int64_t>(1, pod / stride), 1, ranks);
    const std::int64_t pods = (ranks + k - 1) / k;
    if (k == 1) return allreduce(bytes, ranks, across);
    const int kn = static_cast<int>(k);
    return reduce_scatter_s(bytes, kn, inter) + allreduce(bytes / k, pods, across) +
           allgather_s(bytes, kn, inter);
  };
  // A chip holds 1 / (TP x PP) of the weights; CP ranks hold the same ones, so gradients are
  // reduced over DP x CP.
  const double shard = static_cast<double>(tp) * pp;
  const double dense_grad = (s.work.params - s.work.expert_params) / shard * s.grad_bytes;
  const double expert_grad = s.work.expert_params / (shard * ep) * s.grad_bytes;
  b.dp_comm_s =
      dp_allreduce(dense_grad, dp * cp, mp) + dp_allreduce(expert_grad, dp * cp / ep, mp * ep);

  // Exposure: per-micro-batch traffic hides under that micro-batch's compute; DP traffic under
  // the first forward and the last backward; the pipeline fill and drain p2p is exposed.
  auto exposed = [&](double comm, double window) {
    return std::max((1 - s.overlap) * comm, comm - window);
  };
  const double per_mb = tp_mb + cp_mb + ep_mb + pp_mb;
  const double fill = pp > 1 ? 2.0 * (pp - 1) * p2p_s(pp_msg, pp_link) : 0.0;
  const double mb_exposed = exposed(per_mb, busiest_fb),
               dp_exposed = exposed(b.dp_comm_s, busiest_fb);
  b.exposed_comm_s = m * mb_exposed + dp_exposed + fill;
  // The compute that hidden traffic runs beside is slowed by overlap_slowdown for as long.
  b.contention_s = s.overlap_slowdown * (m * (per_mb - mb_exposed) + b.dp_comm_s - dp_exposed);
  b.optimizer_s = s.work.params / static_cast<double>(b.chips_used) * s.optimizer_bytes / bw;

  b.step_s = b.compute_s + b.nonmatrix_s + b.imbalance_s + b.bubble_s + b.exposed_comm_s +
             b.contention_s + b.optimizer_s;
  b.tokens = static_cast<double>(b.global_batch) * s.work.seq;
  b.model_flops = 3 * s.work.forward_flops() * static_cast<double>(b.global_batch);
  b.mfu = b.model_flops / (static_cast<double>(b.chips_used) * peak * b.step_s);
  return b;
}

}  // namespace attain::cluster
