// The training-at-scale simulator against the published record and its own closed forms.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "attain/cluster.hpp"
#include "attain/device.hpp"
#include "attain/op.hpp"
#include "attain/results.hpp"

using namespace attain;
using namespace attain::cluster;

namespace {

// H100 SXM as the device database lists it (bf16 dense 989 TFLOP/s, 3.35 TB/s, 80 GB,
// NVLink 4 at 450 GB/s per direction); written out here so these tests do not need data/devices.
Chip h100() {
  return {"h100-sxm", 989, 3350, 80, 450, "NVIDIA H100 datasheet (dense)"};
}

// Llama 3.1 405B's shape: 126 layers, hidden 16384, FFN 53248 (gated), 128 query heads over 8
// KV heads, vocab 128256.
ModelWork llama405b(std::int64_t seq) {
  return transformer_work("llama-405b-shape", 126, 16384, 53248, 128, 128256, seq, DType::bf16,
                          true, 8);
}

TrainingSetup llama3_setup() {
  TrainingSetup s;
  s.chip = h100();
  s.work = llama405b(8192);
  s.chips = 16384;
  s.global_batch = 2048;  // 16M tokens of 8,192 (Llama 3 paper, Table 4)
  s.par.tp = 8, s.par.pp = 16;
  return s;
}

SimConfig sim_from(const TrainingSetup& s, const StepBreakdown& b, FailureTable ft, double days) {
  SimConfig c;
  c.chips = s.chips;
  c.chips_per_node = s.topo.chips_per_node;
  c.step_s = b.step_s;
  c.tokens_per_step = b.tokens;
  c.model_flops_per_step = b.model_flops;
  c.peak_flops_per_chip = s.chip.peak_tflops * 1e12;
  c.days = days;
  c.failures = std::move(ft);
  c.state_bytes = s.work.params * 14;
  c.spare_nodes = static_cast<int>(std::ceil(0.02 * static_cast<double>(s.chips) / 8));
  return c;
}

// A job with a fixed step and one aggregate failure cause, for checks against closed forms.
SimConfig simple(double mtbf_h, bool replace = false) {
  SimConfig c;
  c.chips = 1024, c.chips_per_node = 8;
  c.step_s = 10, c.tokens_per_step = 1e6, c.model_flops_per_step = 1e18,
  c.peak_flops_per_chip = 1e15;
  c.days = 200;
  c.failures.name = "test";
  if (mtbf_h > 0) {
    FailureCause fc;
    fc.name = "any", fc.scope = Scope::job, fc.rate_per_hour = 1 / mtbf_h, fc.replace = replace;
    c.failures.causes.push_back(fc);
  }
  c.failures.detect_min = 3, c.failures.restart_min = 6, c.failures.rewarm_min = 1;
  c.checkpoint = Checkpoint::sync;
  c.state_bytes = 2e12;  // 1 s at 2 TB/s
  c.checkpoint_overhead_s = 29;
  return c;
}

}  // namespace

TEST(ClusterDaly, PublishedOptima) {
  // Checkpoint cost 5 min: tau = 117, 57 and 9.1 min for MTBF 24 h, 6 h and 15 min.
  EXPECT_NEAR(daly_interval(5, 24 * 60), 117, 0.5);
  EXPECT_NEAR(daly_interval(5, 6 * 60), 57, 0.5);
  EXPECT_NEAR(daly_interval(5, 15), 9.1, 0.05);
  EXPECT_NEAR(young_interval(5, 24 * 60), 120, 1e-9);
  EXPECT_DOUBLE_EQ(daly_interval(5, 2), 2);  // delta >= 2M: checkpoint every MTBF
  EXPECT_DOUBLE_EQ(daly_interval(0, 60), 0);
}

TEST(ClusterFailures, MttfScalesWithNodes) {
  // 6.5 failures per 1,000 node-days of 8 chips: MTTF 1.8 h at 16,384 chips, 0.23 h at 131,072.
  const FailureTable t = load_failure_table("meta-rsc1");
  EXPECT_NEAR(t.mttf_hours(16384, 8), 1.8, 0.02);
  EXPECT_NEAR(t.mttf_hours(131072, 8), 0.23, 0.005);
  // The simulation draws the same rate: 20 days at 16,384 chips.
  SimConfig c = simple(0);
  c.chips = 16384, c.days = 20, c.failures = t, c.spare_nodes = 100;
  const MonteCarlo mc = monte_carlo(c, 16, 7);
  const double expect = 20 * 24 / t.mttf_hours(16384, 8);
  EXPECT_NEAR(mc.unexpected.mean, expect, 0.05 * expect);
}

TEST(ClusterFailures, Llama3TableReproducesTheRecord) {
  const FailureTable t = load_failure_table("llama3");
  ASSERT_EQ(t.causes.size(), 18u);
  EXPECT_EQ(t.observed_chips, 16384);
  double published = 0;
  for (const auto& c : t.causes) published += c.published;
  EXPECT_DOUBLE_EQ(published, 419);
  EXPECT_NEAR(t.rate_per_hour(16384, 8) * 54 * 24, 419, 1e-6);
  EXPECT_NEAR(t.planned_per_day * 54, 47, 1e-9);

  const TrainingSetup s = llama3_setup();
  const StepBreakdown b = step_time(s);
  const MonteCarlo mc = monte_carlo(sim_from(s, b, t, 54), 12, 42);
  EXPECT_NEAR(mc.unexpected.mean, 419, 0.10 * 419);
  EXPECT_NEAR(mc.planned.mean, 47, 0.15 * 47);
  EXPECT_GT(mc.ettr.mean, 0.90);
  EXPECT_LT(mc.ettr.mean, 1.0);
  EXPECT_NEAR(mc.by_cause.at("Faulty GPU").mean, 148, 0.2 * 148);
  EXPECT_NEAR(mc.by_cause.at("GPU HBM3 Memory").mean, 72, 0.25 * 72);
}

TEST(ClusterFailures, BadTablesAreInputErrors) {
  EXPECT_THROW(load_failure_table("no-such-table"), InputError);
  EXPECT_THROW(parse_failure_table("{", "t"), InputError);
  EXPECT_THROW(parse_failure_table(
                   R"({"causes":[{"name":"x","scope":"rack","rate_per_1000_unit_days":1}]})", "t"),
               InputError);
  EXPECT_THROW(parse_failure_table(R"({"causes":[{"name":"x","count":3}]})", "t"),
               InputError);  // no "observed"
  EXPECT_THROW(
      parse_failure_table(R"({"causes":[{"name":"x","rate_per_1000_unit_days":-1}]})", "t"),
      InputError);
  EXPECT_TRUE(load_failure_table("none").causes.empty());
}

TEST(ClusterCollectives, AlphaBeta) {
  const Link l{100, 10};  // 100 GB/s, 10 us
  // Ring all-reduce of 1 GB over 8 ranks: 14 alpha + 2 * 7/8 * 10 ms.
  EXPECT_NEAR(ring_allreduce_s(1e9, 8, l), 14 * 10e-6 + 2 * 0.875 * 0.01, 1e-12);
  EXPECT_NEAR(tree_allreduce_s(1e9, 8, l), 6 * 10e-6 + 2 * 0.01, 1e-12);
  EXPECT_LT(tree_allreduce_s(1e3, 1024, l), ring_allreduce_s(1e3, 1024, l));  // latency-bound
  EXPECT_LT(ring_allreduce_s(1e10, 16, l), tree_allreduce_s(1e10, 16, l));    // bandwidth-bound
  EXPECT_NEAR(allgather_s(1e9, 4, l) + reduce_scatter_s(1e9, 4, l), ring_allreduce_s(1e9, 4, l),
              1e-12);
  EXPECT_NEAR(alltoall_s(8e8, 8, l), 7 * 10e-6 + 0.875 * 8e-3, 1e-12);
  EXPECT_NEAR(p2p_s(1e6, l), 10e-6 + 1e-5, 1e-15);
  EXPECT_EQ(ring_allreduce_s(1e9, 1, l), 0);
}

TEST(ClusterStep, OneChipIsItsRoofline) {
  TrainingSetup s;
  s.chip = h100();
  s.work = transformer_work("gpt-13b-shape", 40, 5120, 20480, 40, 50257, 2048, DType::bf16);
  s.chips = 1, s.global_batch = 8, s.efficiency = 0.6;
  s.par.tp = s.par.pp = 1;
  const StepBreakdown b = step_time(s);
  EXPECT_EQ(b.dp, 1);
  EXPECT_EQ(b.micro_batches, 8);
  EXPECT_DOUBLE_EQ(b.exposed_comm_s, 0);
  EXPECT_DOUBLE_EQ(b.bubble_s, 0);
  // Every GEMM here is compute-bound and attention is fused, so the step runs at the
  // efficiency (minus the non-matrix ops and the optimizer update). One stage: no imbalance.
  EXPECT_DOUBLE_EQ(b.imbalance_s, 0);
  EXPECT_DOUBLE_EQ(b.stage_load, 1);
  EXPECT_NEAR(b.step_s, b.compute_s + b.nonmatrix_s + b.optimizer_s, 1e-12);
  EXPECT_NEAR(b.mfu, 0.6 * b.compute_s / b.step_s, 1e-9);
  EXPECT_LT(b.optimizer_s, 0.05 * b.step_s);
  // The non-matrix ops: per token and layer two LayerNorms (4 h), two adds (6 h), rotary on q and
  // k (4 h), GELU over the MLP's 4 h (2 x 4 h); per token the loss reads the 50,257 logits.
  // Forward and backward (2x) of 8 sequences of 2,048 tokens, bf16, at 0.6 of 3,350 GB/s.
  EXPECT_DOUBLE_EQ(s.work.nonmatrix_per_layer, (10 + 4 + 2 * 4) * 5120.0);
  const double elems = 40 * (10 + 4 + 2 * 4) * 5120.0 + 50257;
  EXPECT_NEAR(b.nonmatrix_s, 8 * 3 * elems * 2048 * 2 / (3350e9 * 0.6), 1e-9 * b.nonmatrix_s);
  EXPECT_LT(b.nonmatrix_s, 0.15 * b.compute_s);  // about a tenth at hidden 5,120
  EXPECT_NEAR(b.compute_s, 8 * 3 * s.work.forward_flops() / (989e12 * 0.6), 1e-9 * b.compute_s);
  // Unfused, the (s, s) scores go through memory and attention becomes memory-bound.
  s.fused_attention = false;
  EXPECT_LT(step_time(s).mfu, b.mfu - 0.02);
}

TEST(ClusterStep, PipelineBubbleAndLayouts) {
  TrainingSetup s = llama3_setup();
  s.par.virtual_stages = 1;
  StepBreakdown b = step_time(s);
  EXPECT_EQ(b.dp, 128);
  EXPECT_EQ(b.micro_batches, 16);
  // The pipeline runs at the busiest stage's pace: 126 layers on 16 stages with the LM head on
  // the last leave 8 layers on the busiest (Llama 3 took one layer off the first and the last).
  EXPECT_EQ(b.stage_layers, 8);
  EXPECT_EQ(b.last_layers, 7);
  EXPECT_GT(b.stage_load, 1.005);
  EXPECT_LT(b.stage_load, 1.02);
  const double work_fb = b.fwd_s + b.bwd_s + 3 * b.nonmatrix_fwd_s;
  EXPECT_NEAR(b.bubble_s, 15.0 * b.stage_load * work_fb, 1e-9);
  EXPECT_NEAR(b.imbalance_s, 16 * (b.stage_load - 1) * work_fb, 1e-9);
  s.par.virtual_stages = 4;
  const StepBreakdown b4 = step_time(s);
  EXPECT_NEAR(b4.bubble_s, b.bubble_s / 4, 1e-9);
  EXPECT_GT(b4.mfu, b.mfu);
  // Llama 3 reports 41% BF16 MFU for this layout; the model lands within a broad band.
  EXPECT_GT(b4.mfu, 0.25);
  EXPECT_LT(b4.mfu, 0.65);
  s.chips = 127;  // fewer than one TP 8 x PP 16 group
  EXPECT_THROW(step_time(s), InputError);
  s.chips = 16384, s.par.pp = 256;
  EXPECT_THROW(step_time(s), InputError);  // more stages than layers
}

TEST(ClusterStep, StagesCarryTheLmHead) {
  TrainingSetup s;
  s.chip = h100();
  s.chips = 4, s.global_batch = 8, s.par.tp = 1, s.par.pp = 4, s.par.virtual_stages = 1;
  // 12 layers on 4 stages and an LM head worth about 3 layers (vocab 43,008 x hidden 1,024).
  // (Non-matrix ops left out: the stages' arithmetic is then the matrix ops' alone.)
  s.work = transformer_work("t", 12, 1024, 4096, 8, 43008, 1024, DType::bf16);
  s.work.nonmatrix_per_layer = s.work.nonmatrix_loss = 0;
  StepBreakdown b = step_time(s);
  const double head = b.ops.back().fwd_s, layer = (b.fwd_s - head) / 12;
  ASSERT_GT(head / layer, 2.8);
  ASSERT_LT(head / layer, 3.2);
  // Best split: 1 layer and the head on the last stage, 4, 4 and 3 on the others.
  EXPECT_EQ(b.last_layers, 1);
  EXPECT_EQ(b.stage_layers, 4);
  EXPECT_NEAR(b.stage_load, 4 * 4 / (12 + head / layer), 1e-9);
  // With 2 virtual stages each stage holds 2 layers at least: 2 and the head are the busiest.
  s.par.virtual_stages = 2;
  b = step_time(s);
  EXPECT_EQ(b.last_layers, 2);
  EXPECT_NEAR(b.stage_load, 4 * (2 + head / layer) / (12 + head / layer), 1e-9);
  // A head of almost no weight (vocab 8) and layers that divide evenly: 3 a stage, next to no
  // imbalance.
  s.work = transformer_work("t", 12, 1024, 4096, 8, 8, 1024, DType::bf16);
  s.par.virtual_stages = 1;
  b = step_time(s);
  EXPECT_EQ(b.stage_layers, 3);
  EXPECT_EQ(b.last_layers, 3);
  EXPECT_LT(b.stage_load, 1.01);
  EXPECT_LT(b.imbalance_s, 0.01 * b.step_s);
}

TEST(ClusterStep, AnyChipCountKeepsTheBatch) {
  TrainingSetup s = llama3_setup();  // TP 8 x PP 16, batch 2,048
  s.chips = 100000;
  const StepBreakdown b = step_time(s);
  // 100,000 / 128 = 781 whole groups: 99,968 chips train, 32 are left over.
  EXPECT_EQ(b.dp, 781);
  EXPECT_EQ(b.chips_used, 99968);
  EXPECT_EQ(b.chips_left, 32);
  // The batch stays 2,048: ranks hold 2 or 3 sequences and the busiest (3) set the step.
  EXPECT_EQ(b.global_batch, 2048);
  EXPECT_EQ(b.micro_batches, 3);
  EXPECT_DOUBLE_EQ(b.tokens, 2048.0 * s.work.seq);
  // MFU counts the chips that train.
  EXPECT_NEAR(b.mfu, b.model_flops / (99968.0 * s.chip.peak_tflops * 1e12 * b.step_s), 1e-12);
  // --scale-batch fills every rank: 3 x 781 = 2,343 sequences in the same step time.
  s.scale_batch = true;
  const StepBreakdown scaled = step_time(s);
  EXPECT_EQ(scaled.global_batch, 2343);
  EXPECT_NEAR(scaled.step_s, b.step_s, 1e-12);
  EXPECT_NEAR(scaled.mfu / b.mfu, 2343.0 / 2048, 1e-9);
  // A count that splits exactly leaves nothing over and keeps the batch either way.
  s.chips = 16384;
  const StepBreakdown exact = step_time(s);
  EXPECT_EQ(exact.chips_left, 0);
  EXPECT_EQ(exact.global_batch, 2048);
}

// A DP group across oversubscribed pods reduces hierarchically: within a pod at the NIC's
// bandwidth, the 1 / k shard across pods at the NIC's share of the tier above.
TEST(ClusterStep, OversubscribedPods) {
  TrainingSetup s = llama3_setup();  // TP 8 x PP 16 x DP 128: DP members 128 chips apart
  s.allreduce = AllReduce::ring;
  const double flat = step_time(s).dp_comm_s;
  s.topo.pod_chips = 16384;  // one pod holds the job: nothing crosses the tier above
  s.topo.oversubscription = 7;
  EXPECT_DOUBLE_EQ(step_time(s).dp_comm_s, flat);
  s.topo.pod_chips = 3072;  // Llama 3's pods: 24 DP members each, 6 pods
  const double bytes = s.work.params / (8 * 16) * 2;
  const Link nic{s.topo.inter_gbps, s.topo.inter_latency_us};
  const Link across{s.topo.inter_gbps / 7, s.topo.inter_latency_us};
  const double expect = reduce_scatter_s(bytes, 24, nic) + ring_allreduce_s(bytes / 24, 6, across) +
                        allgather_s(bytes, 24, nic);
  const StepBreakdown b = step_time(s);
  EXPECT_NEAR(b.dp_comm_s, expect, 1e-9);
  EXPECT_GT(b.dp_comm_s, flat);
  s.topo.oversubscription = 1;  // a non-blocking tier above: the hierarchy costs about a flat ring
  EXPECT_NEAR(step_time(s).dp_comm_s / flat, 1, 0.1);
  // CP 16: a DP slice's 16 CP members sit in one 128-chip span, the 2,048-chip blocks one to a
  // pod: 16 members a pod, 8 pods.
  s.topo.oversubscription = 7, s.par.cp = 16, s.work = llama405b(131072), s.global_batch = 128;
  const double cp_bytes = s.work.params / (8 * 16) * 2;
  EXPECT_NEAR(step_time(s).dp_comm_s,
              reduce_scatter_s(cp_bytes, 16, nic) + ring_allreduce_s(cp_bytes / 16, 8, across) +
                  allgather_s(cp_bytes, 16, nic),
              1e-9);
  s.topo.oversubscription = 0.5;
  EXPECT_THROW(step_time(s), InputError);
  s.topo.oversubscription = 1, s.topo.pod_chips = -1;
  EXPECT_THROW(step_time(s), InputError);
}

TEST(ClusterStep, CommunicationAndOverlap) {
  TrainingSetup s = llama3_setup();
  s.overlap_slowdown = 0;
  s.overlap = 0;
  const StepBreakdown none = step_time(s);
  s.overlap = 1;
  const StepBreakdown full = step_time(s);
  EXPECT_GT(none.tp_comm_s, 0);
  EXPECT_GT(none.dp_comm_s, 0);
  EXPECT_GT(none.pp_comm_s, 0);
  EXPECT_GT(none.exposed_comm_s, full.exposed_comm_s);
  EXPECT_NEAR(none.step_s - full.step_s, none.exposed_comm_s - full.exposed_comm_s, 1e-9);
  EXPECT_DOUBLE_EQ(full.contention_s, 0);
  // Compute beside the hidden traffic runs overlap_slowdown slower for as long as it hides:
  // with nothing hidden there is nothing to slow.
  s.overlap_slowdown = 0.25;
  const StepBreakdown slowed = step_time(s);
  const double hidden = none.exposed_comm_s - full.exposed_comm_s;  // what overlap 1 hides
  EXPECT_GT(hidden, 0);
  EXPECT_NEAR(slowed.contention_s, 0.25 * hidden, 1e-9 * hidden);
  EXPECT_NEAR(slowed.step_s, full.step_s + slowed.contention_s, 1e-9);
  s.overlap = 0;
  EXPECT_DOUBLE_EQ(step_time(s).contention_s, 0);
  s.overlap_slowdown = -0.1;
  EXPECT_THROW(step_time(s), InputError);
  s.overlap = 1, s.overlap_slowdown = 0;
  // A slower scale-out network costs more once traffic is exposed.
  s.overlap = 0, s.topo.inter_gbps = 12.5;
  EXPECT_GT(step_time(s).step_s, none.step_s);
}

TEST(ClusterStep, ChoosesALayoutThatFits) {
  TrainingSetup s = llama3_setup();
  s.par = {};
  const Parallelism p = choose_parallelism(s);
  EXPECT_EQ(p.tp, 8);
  EXPECT_EQ(p.pp, 16);  // 405B: bf16 weights + gradients under 20 GB per chip
  EXPECT_EQ(p.ep, 1);
  EXPECT_EQ(p.virtual_stages, 4);
}

TEST(ClusterSim, TimeIsAccountedFor) {
  const SimConfig c = simple(5, true);
  const RunResult r = simulate(c, 1);
  EXPECT_NEAR(r.wall_h, 200 * 24, 1e-9);
  EXPECT_NEAR(r.useful_h + r.lost_work_h + r.checkpoint_h + r.down_h, r.wall_h, 1e-6 * r.wall_h);
  EXPECT_GT(r.unexpected, 700);
  EXPECT_NEAR(r.ettr, r.useful_h / r.wall_h, 1e-12);
  EXPECT_NEAR(r.goodput, r.ettr * 1e18 / 10 / (1024 * 1e15), 1e-9);
}

TEST(ClusterSim, NoFailuresMeansOnlyCheckpointCost) {
  SimConfig c = simple(0);
  c.checkpoint_interval_min = 30;
  const RunResult r = simulate(c, 3);
  EXPECT_EQ(r.unexpected, 0);
  EXPECT_NEAR(r.ettr, 1800.0 / (1800 + 30), 1e-4);  // pause = 29 s + 1 s write
}

TEST(ClusterSim, MatchesTheClosedForm) {
  for (double mtbf : {3.0, 12.0}) {
    const SimConfig c = simple(mtbf);
    const MonteCarlo mc = monte_carlo(c, 24, 11);
    EXPECT_NEAR(mc.ettr.mean, expected_ettr(c), 0.01) << "mtbf " << mtbf;
    EXPECT_LE(mc.ettr.lo, mc.ettr.mean);
    EXPECT_GE(mc.ettr.hi, mc.ettr.mean);
  }
}

TEST(ClusterSim, DalyIntervalIsNearTheBest) {
  SimConfig c = simple(4);
  const double best = monte_carlo(c, 16, 5).ettr.mean;
  c.checkpoint_interval_min = 4 * plan_checkpoints(c).daly_min;
  EXPECT_GT(best, monte_carlo(c, 16, 5).ettr.mean);
  c.checkpoint_interval_min = plan_checkpoints(simple(4)).daly_min / 4;
  EXPECT_GT(best, monte_carlo(c, 16, 5).ettr.mean);
}

TEST(ClusterSim, SparesAndAsyncCheckpointsBuyBackTime) {
  SimConfig c = simple(2, true);
  c.spare_nodes = 0, c.replace_min = 60;
  const double bare = monte_carlo(c, 8, 9).ettr.mean;
  c.spare_nodes = 50;
  const double spared = monte_carlo(c, 8, 9).ettr.mean;
  EXPECT_GT(spared, bare + 0.1);  // every failure waited an hour for a node
  c.checkpoint = Checkpoint::async, c.checkpoint_overhead_s = 1;
  EXPECT_GT(monte_carlo(c, 8, 9).ettr.mean, spared);
}

TEST(ClusterSim, StragglersSetThePace) {
  SimConfig c = simple(0);
  c.checkpoint_interval_min = 1e9;  // never
  c.straggler_fraction = 1, c.straggler_slowdown = 1.25;
  const RunResult r = simulate(c, 2);
  EXPECT_NEAR(r.goodput, 0.8 * 1e18 / 10 / (1024 * 1e15), 1e-9);
  EXPECT_NEAR(r.ettr, 1, 1e-9);  // slow, but training all the time
}

TEST(ClusterSim, TokenBudget) {
  SimConfig c = simple(0);
  c.days = 0, c.token_budget = 1e6 * 8640;  // 8,640 steps of 10 s = 1 day of compute
  c.checkpoint_interval_min = 1e9;
  const RunResult r = simulate(c, 4);
  EXPECT_TRUE(r.budget_reached);
  EXPECT_NEAR(r.wall_h, 24, 1e-6);
  EXPECT_NEAR(r.tokens, c.token_budget, 1e-6 * c.token_budget);
}

TEST(ClusterSim, DeterministicAcrossThreads) {
  SimConfig c = simple(1, true);
  c.spare_nodes = 3, c.days = 30, c.timeline = true;
  const MonteCarlo a = monte_carlo(c, 6, 123, 1), b = monte_carlo(c, 6, 123, 3);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a.runs[i].ettr, b.runs[i].ettr);
  EXPECT_FALSE(a.runs[0].timeline.empty());
  EXPECT_TRUE(a.runs[1].timeline.empty());
  EXPECT_EQ(a.runs[0].timeline.size(),
            static_cast<std::size_t>(a.runs[0].unexpected + a.runs[0].planned));
}

TEST(ClusterSim, HundredThousandChipsSixtyDaysIsFast) {
  SimConfig c = simple(0);
  c.chips = 100000, c.days = 60, c.failures = load_failure_table("llama3"), c.spare_nodes = 250;
  c.timeline = true;
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = simulate(c, 99);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10.0);
  EXPECT_GT(r.unexpected, 1000);  // ~2,450 expected at this scale
}

TEST(ClusterSim, BadInputsAreInputErrors) {
  SimConfig c = simple(1);
  c.days = 0;
  EXPECT_THROW(simulate(c, 1), InputError);
  c = simple(1), c.straggler_fraction = 2;
  EXPECT_THROW(simulate(c, 1), InputError);
  EXPECT_THROW(monte_carlo(simple(1), 0, 1), InputError);
}

TEST(ClusterStats, ConfidenceInterval) {
  const Stat s = summarize({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.sd, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(s.hi - s.mean, 2.776 * std::sqrt(2.5) / std::sqrt(5.0), 1e-9);
  EXPECT_NEAR(s.p5, 1.2, 1e-12);
  EXPECT_NEAR(s.p95, 4.8, 1e-12);
}

// Reported, not asserted: the step-time model against MegaScale's strong-scaling table (NSDI '24,
// arXiv:2402.15627): 175B GPT, batch 6144 x 2048 tokens, TP 8, PP 8, on 3,072 to 12,288 Ampere
// GPUs. Our assumptions: A100-SXM4-80GB datasheet (312 TFLOP/s bf16, 2,039 GB/s, NVLink 3 at
// 300 GB/s per direction), 200 Gb/s (25 GB/s) per GPU to the network, GPT-3's shape (96 layers,
// hidden 12288, 96 heads, vocab 50257), default efficiency 0.7, overlap 0.8, 4 virtual stages.
TEST(ClusterReport, MegaScaleStrongScaling) {
  TrainingSetup s;
  s.chip = {"a100-sxm4-80gb", 312, 2039, 80, 300, "NVIDIA A100 datasheet (dense)"};
  s.topo.inter_gbps = 25;
  s.work = transformer_work("gpt3-175b", 96, 12288, 4 * 12288, 96, 50257, 2048, DType::bf16);
  s.global_batch = 6144;
  s.par.tp = 8, s.par.pp = 8;
  const std::int64_t gpus[] = {3072, 6144, 8192, 12288};
  const double published[] = {23.66, 12.21, 9.56, 6.34};
  std::printf("MegaScale 175B strong scaling (published s/iteration vs this model)\n");
  std::printf("%8s %10s %10s %8s %7s %7s\n", "GPUs", "published", "model", "error", "MFU",
              "bubble");
  for (int i = 0; i < 4; ++i) {
    s.chips = gpus[i];
    const StepBreakdown b = step_time(s);
    std::printf("%8lld %10.2f %10.2f %+7.1f%% %6.1f%% %6.1f%%\n", static_cast<long long>(gpus[i]),
                published[i], b.step_s, 100 * (b.step_s / published[i] - 1), 100 * b.mfu,
                100 * b.bubble_s / b.step_s);
    // The validation target (docs/cluster.md, section 7): each within 10% of the record.
    EXPECT_NEAR(b.step_s / published[i], 1, 0.10) << gpus[i] << " GPUs";
  }
}

// Nemotron-4 340B (arXiv:2406.11704, section 2): 96 layers, hidden 18432, 96 query heads over 8
// KV heads, an ungated squared-ReLU MLP of 73728, vocab 256000, sequences of 4096.
ModelWork nemotron340b() {
  return transformer_work("nemotron-4-340b", 96, 18432, 73728, 96, 256000, 4096, DType::bf16, false,
                          8);
}

// The H100's sustained efficiency in training is this model fitted to the published H100 run
// with the least communication to model: NVIDIA's DGX Cloud Benchmarking recipe for Nemotron-4
// 340B (NeMo 24.11, BF16) on 128 H100s (16 DGX nodes), TP 8, PP 8, 12 virtual stages,
// micro-batch 1, global batch 32: 4.77 s a step (NGC catalog, "Nemotron4 340B DGXC
// Benchmarking"). Bisection on the step time, which falls as the efficiency rises.
double h100_training_efficiency() {
  TrainingSetup s;
  s.chip = h100();
  s.work = nemotron340b();
  s.par.tp = 8, s.par.pp = 8, s.par.virtual_stages = 12;
  s.chips = 128, s.global_batch = 32;
  double lo = 0.2, hi = 1;
  for (int i = 0; i < 50; ++i) {
    s.efficiency = (lo + hi) / 2;
    (step_time(s).step_s > 4.77 ? lo : hi) = s.efficiency;
  }
  return s.efficiency;
}

TEST(ClusterReport, H100InTraining) {
  const double fit = h100_training_efficiency();
  std::printf("H100 in training: efficiency %.4f fits 4.77 s on 128 GPUs\n", fit);
  // The device files carry the fit, rounded (data/devices/h100-sxm.json, and h200.json after it).
  EXPECT_NEAR(load_device("h100-sxm").training_efficiency, fit, 0.005);
  EXPECT_DOUBLE_EQ(load_device("h200").training_efficiency,
                   load_device("h100-sxm").training_efficiency);
}

// Reported and asserted: the published H100 runs the fit did not see, at the fitted efficiency,
// each within 10% of the record (docs/cluster.md, section 7).
TEST(ClusterReport, PublishedH100Runs) {
  const double eff = load_device("h100-sxm").training_efficiency;
  // Nemotron-4 340B pre-training (arXiv:2406.11704, Table 2): TP 8, PP 12 interleaved, DP 16 /
  // 32 / 64 on 1,536 / 3,072 / 6,144 H100s, batches of 768 / 1,536 / 2,304; s per iteration.
  TrainingSetup n;
  n.chip = h100(), n.work = nemotron340b(), n.efficiency = eff;
  n.par.tp = 8, n.par.pp = 12;
  const std::int64_t gpus[] = {1536, 3072, 6144}, batch[] = {768, 1536, 2304};
  const double step_s[] = {10.3, 10.3, 8.0};
  std::printf("%-34s %9s %9s %8s\n", "run", "published", "model", "error");
  for (int i = 0; i < 3; ++i) {
    n.chips = gpus[i], n.global_batch = batch[i];
    const StepBreakdown b = step_time(n);
    std::printf("Nemotron-4 340B, %5lld H100 (s)     %9.2f %9.2f %+7.1f%%\n",
                static_cast<long long>(gpus[i]), step_s[i], b.step_s,
                100 * (b.step_s / step_s[i] - 1));
    EXPECT_NEAR(b.step_s / step_s[i], 1, 0.10) << gpus[i] << " GPUs";
  }
  // Llama 3 405B (arXiv:2407.21783, Table 4): BF16 MFU on 8,192 and 16,384 H100s (seq 8,192) and
  // with CP 16 (seq 131,072), 16M tokens a step.
  TrainingSetup l = llama3_setup();
  l.efficiency = eff;
  // Meta's network (arXiv:2407.21783, section 3.3.1): pods of 3,072 GPUs at full bisection, the
  // aggregation layer between them oversubscribed 1:7.
  l.topo.pod_chips = 3072, l.topo.oversubscription = 7;
  // At 131,072 tokens the attention products are 57% of the forward FLOPs as counted (the full
  // square), where the model runs them at the GEMMs' efficiency and the paper does not say how
  // its MFU counts them: that row's miss is explained in docs/cluster.md, section 7, and held
  // to 20% here.
  struct Row {
    const char* name;
    std::int64_t chips, seq, batch;
    int cp;
    double mfu, tolerance;
  };
  for (const Row& r :
       {Row{"Llama 3 405B,  8192 H100 (MFU)", 8192, 8192, 2048, 1, 0.43, 0.10},
        Row{"Llama 3 405B, 16384 H100 (MFU)", 16384, 8192, 2048, 1, 0.41, 0.10},
        Row{"Llama 3 405B, 16384 H100, CP 16", 16384, 131072, 128, 16, 0.38, 0.20}}) {
    l.chips = r.chips, l.global_batch = r.batch, l.par.cp = r.cp;
    l.work = llama405b(r.seq);
    const StepBreakdown b = step_time(l);
    std::printf("%-34s %8.1f%% %8.1f%% %+7.1f%%\n", r.name, 100 * r.mfu, 100 * b.mfu,
                100 * (b.mfu / r.mfu - 1));
    EXPECT_NEAR(b.mfu / r.mfu, 1, r.tolerance) << r.name;
  }
}

TEST(ClusterStep, EfficiencyFromMeasuredResults) {
  ResultsFile f;
  auto add = [&](const char* backend, double eff, bool verified, const char* status = "ok",
                 bool projected = false) {
    Result r;
    r.backend = backend, r.efficiency = eff, r.verified = verified, r.status = status;
    r.projected = projected;
    f.results.push_back(r);
  };
  add("attain", 0.8, true);
  add("attain", 0.2, true);
  add("attain", 0.9, false);  // wrong answers are not speeds
  add("attain", 0, false, "unsupported");
  add("attain", 0.95, true, "ok", true);  // a projection, not a measurement
  add("openblas", 0.5, true);
  const MeasuredEfficiency all = efficiency_from_results(f);
  EXPECT_EQ(all.ops, 3);
  EXPECT_NEAR(all.efficiency, std::cbrt(0.8 * 0.2 * 0.5), 1e-12);
  const MeasuredEfficiency ours = efficiency_from_results(f, "attain");
  EXPECT_EQ(ours.ops, 2);
  EXPECT_NEAR(ours.efficiency, 0.4, 1e-12);
  EXPECT_THROW(efficiency_from_results(f, "blis"), InputError);
  EXPECT_THROW(efficiency_from_results(ResultsFile{}), InputError);
}

TEST(ClusterStep, ChipOpsFollowTheLayout) {
  const ModelWork w = llama405b(8192);
  const WorkItem& qkv = w.forward[0];   // (8192, 16384 + 2 x 1024, 16384): column-parallel
  const WorkItem& qk = w.forward[1];    // 128 heads of (8192, 8192, 128)
  const WorkItem& down = w.forward[5];  // (8192, 16384, 53248): row-parallel
  Op o = chip_op(qkv, 1, 8);
  EXPECT_EQ(o.m, 8192);
  EXPECT_EQ(o.n, (16384 + 2 * 8 * 128) / 8);
  EXPECT_EQ(o.k, 16384);
  o = chip_op(down, 2, 8);  // two sequences a micro-batch: twice the rows
  EXPECT_EQ(o.m, 16384);
  EXPECT_EQ(o.n, 16384);
  EXPECT_EQ(o.k, 53248 / 8);
  o = chip_op(qk, 1, 8);
  EXPECT_EQ(o.batch, 16);
  EXPECT_EQ(o.m, 8192);
  EXPECT_EQ(o.n, 8192);
  // CP 4: every rank takes a quarter of the rows (queries), against all the keys.
  o = chip_op(qk, 1, 8, 4);
  EXPECT_EQ(o.m, 2048);
  EXPECT_EQ(o.n, 8192);
  EXPECT_EQ(chip_op(qkv, 1, 8, 4).m, 2048);
  // Fewer heads than TP ranks: the rows split instead.
  WorkItem few = qk;
  few.op.batch = 2;
  o = chip_op(few, 1, 8);
  EXPECT_EQ(o.batch, 1);
  EXPECT_EQ(o.m, 2 * 8192 / 8);
  // FLOPs are conserved when the dimensions divide.
  for (const auto& item : w.forward)
    EXPECT_NEAR(chip_op(item, 1, 8, 2).flops() * 16, item.op.flops(), 1e-6 * item.op.flops());
}

TEST(ClusterStep, NearestMeasuredOp) {
  auto g = [](std::int64_t m, std::int64_t n, std::int64_t k, DType dt = DType::bf16) {
    Op o;
    o.kind = OpKind::gemm, o.dtype = dt, o.m = m, o.n = n, o.k = k;
    return o;
  };
  const std::vector<MeasuredOp> ms = {{g(8192, 8192, 8192), 0.9},
                                      {g(128, 8192, 8192), 0.5},
                                      {g(8192, 8192, 8192, DType::f32), 0.3}};
  double d = -1;
  const MeasuredOp* near = nearest_measured(ms, g(8192, 10240, 8192), &d);
  ASSERT_NE(near, nullptr);
  EXPECT_DOUBLE_EQ(near->efficiency, 0.9);
  EXPECT_NEAR(d, std::log(10240.0 / 8192), 1e-12);
  EXPECT_DOUBLE_EQ(nearest_measured(ms, g(64, 8192, 8192))->efficiency, 0.5);
  EXPECT_DOUBLE_EQ(nearest_measured(ms, g(64, 8192, 8192, DType::f32))->efficiency, 0.3);
  EXPECT_EQ(nearest_measured(ms, g(64, 64, 64, DType::f16)), nullptr);  // no fp16 measured
  Op b = g(8192, 8192, 128);
  b.kind = OpKind::batched_gemm;
  EXPECT_EQ(nearest_measured(ms, b), nullptr);  // no batched GEMM measured
}

TEST(ClusterStep, MeasuredEfficienciesPerOp) {
  TrainingSetup s = llama3_setup();
  s.efficiency = 0.5;
  const StepBreakdown given = step_time(s);
  ASSERT_EQ(given.ops.size(), s.work.forward.size());
  EXPECT_EQ(given.ops_measured, 0);
  double sum = 0;
  for (const auto& o : given.ops) {
    sum += o.fwd_s;
    EXPECT_DOUBLE_EQ(o.efficiency, 0.5);
  }
  EXPECT_NEAR(sum, given.fwd_s, 1e-12 * given.fwd_s);
  // The QKV projection measured at its exact chip shape runs at the measured 0.8, the other
  // GEMMs take it from their nearest neighbour, attention (no batched GEMM measured) keeps 0.5.
  s.measured = {{given.ops[0].op, 0.8}};
  const StepBreakdown m = step_time(s);
  EXPECT_EQ(m.ops_measured, 5);  // QKV, output, up/gate, down, LM head
  EXPECT_DOUBLE_EQ(m.ops[0].efficiency, 0.8);
  EXPECT_DOUBLE_EQ(m.ops[0].distance, 0);
  EXPECT_EQ(m.ops[0].measured, given.ops[0].op.spec());
  EXPECT_NEAR(m.ops[0].fwd_s, given.ops[0].fwd_s * 0.5 / 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(m.ops[1].efficiency, 0.5);
  EXPECT_TRUE(m.ops[1].measured.empty());
  EXPECT_LT(m.step_s, given.step_s);
  // A measured figure above 1 (a ceiling error) never makes an op faster than its roofline.
  s.measured = {{given.ops[0].op, 1.4}};
  EXPECT_DOUBLE_EQ(step_time(s).ops[0].efficiency, 1.0);
}

TEST(ClusterStep, ContextParallel) {
  TrainingSetup s = llama3_setup();
  s.work = llama405b(131072);
  s.global_batch = 128;  // 16M tokens of 131,072 (Llama 3, Table 4)
  s.par.cp = 16;
  const StepBreakdown b = step_time(s);
  EXPECT_EQ(b.cp, 16);
  EXPECT_EQ(b.dp, 8);
  EXPECT_EQ(b.chips_used, 16384);
  EXPECT_EQ(b.micro_batches, 16);
  // TP 8 fills a node: CP's K/V all-gathers cross the scale-out network.
  EXPECT_GT(b.cp_comm_s, 0);
  // Each CP rank computes 1/16 of every op; the model's FLOPs are the whole sequence's.
  double per_rank = 0;
  for (const auto& o : b.ops) per_rank += o.op.flops() * o.count;
  EXPECT_NEAR(per_rank * 8 * 16, s.work.forward_flops(), 1e-6 * per_rank * 128);
  EXPECT_NEAR(b.model_flops, 3 * s.work.forward_flops() * 128, 1e-6 * b.model_flops);
  // Without CP the same chips hold 16x the DP ranks and no CP traffic.
  s.par.cp = 1;
  const StepBreakdown no_cp = step_time(s);
  EXPECT_EQ(no_cp.dp, 128);
  EXPECT_DOUBLE_EQ(no_cp.cp_comm_s, 0);
  s.par.cp = 262144;  // more ranks than tokens
  EXPECT_THROW(step_time(s), InputError);
}

TEST(ClusterStep, ImportedResultsCountAsMeasured) {
  ResultsFile f;
  f.machine.device = "h200";  // attain import: measured elsewhere, not verified here
  auto add = [&](const char* spec, double eff) {
    Result r;
    r.backend = "cublas", r.op.op = Op::parse(spec), r.efficiency = eff, r.verified = false;
    f.results.push_back(r);
  };
  add("gemm:m=8192,n=8192,k=8192,dtype=bf16", 0.8);
  add("gemm:m=1,n=8192,k=8192,dtype=bf16", 0.5);
  add("gemm:m=2,n=8192,k=8192,dtype=bf16", 1.2);  // a ceiling error: left out everywhere
  const MeasuredEfficiency m = efficiency_from_results(f);
  EXPECT_EQ(m.ops, 2);
  EXPECT_NEAR(m.efficiency, std::sqrt(0.8 * 0.5), 1e-12);
  ASSERT_EQ(m.measured.size(), 2u);
  // The same op from two backends: the best.
  add("gemm:m=8192,n=8192,k=8192,dtype=bf16", 0.85);
  f.results.back().backend = "other";
  const MeasuredEfficiency two = efficiency_from_results(f);
  EXPECT_EQ(two.measured.size(), 2u);
  double best = 0;
  for (const auto& x : two.measured) best = std::max(best, x.efficiency);
  EXPECT_DOUBLE_EQ(best, 0.85);
  f.machine.device = "host";  // attain's own run: only verified results count
  EXPECT_THROW(efficiency_from_results(f), InputError);
}

TEST(ClusterTarget, FewestSparesThatReachTheTarget) {
  SimConfig c = simple(2, true);  // every failure waits an hour for a node without a spare
  c.replace_min = 60;
  c.spare_nodes = 0;
  const double bare = monte_carlo(c, 8, 9).ettr.mean;
  const TargetPlan t = plan_for_target(c, TargetMetric::ettr, bare + 0.05, 8, 9);
  ASSERT_TRUE(t.reached);
  EXPECT_GT(t.spare_nodes, 0);
  EXPECT_GE(t.ettr.mean, bare + 0.05);
  // One spare fewer, with the same seeds, falls short.
  c.spare_nodes = t.spare_nodes - 1;
  EXPECT_LT(monte_carlo(c, 8, 9).ettr.mean, bare + 0.05);
  EXPECT_GT(t.evaluated, 1);
  // Already met without spares: none.
  EXPECT_EQ(plan_for_target(c, TargetMetric::ettr, bare - 0.05, 8, 9).spare_nodes, 0);
  // Goodput: the same search on the other figure.
  const TargetPlan g = plan_for_target(c, TargetMetric::goodput, t.goodput.mean, 8, 9);
  EXPECT_TRUE(g.reached);
  EXPECT_LE(g.spare_nodes, t.spare_nodes);
  // A target that recovery time alone forbids: out of reach, with the best found.
  const TargetPlan no = plan_for_target(c, TargetMetric::ettr, 0.9999, 8, 9);
  EXPECT_FALSE(no.reached);
  EXPECT_EQ(no.spare_nodes, 1024 / 8);
  EXPECT_LT(no.ettr.mean, 0.9999);
  EXPECT_THROW(plan_for_target(c, TargetMetric::ettr, 1.0, 8, 9), InputError);
  EXPECT_THROW(plan_for_target(c, TargetMetric::ettr, 0, 8, 9), InputError);
}
