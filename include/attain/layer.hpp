// One decoder layer's op chain, run end to end (attain bench --layer MODEL:PHASE:TOKENS).
//
// The ops come from the catalog (model_ops) in the order a layer runs them, each with its
// stage: ops of one stage are independent of each other (they read the same input or
// different outputs of the stage before), so the auto schedule runs each stage's GEMMs
// together in one parallel region (gemm::run_together) instead of one fork/join per op.
// For MoE models the layer is an MoE layer, for dense ones a dense layer; the LM head is not
// part of a layer. A model whose layers read different spans of the context at decode (sliding
// windows, chunks) runs each span's attention products in the one layer.
#pragma once

#include <string>
#include <vector>

#include "attain/bench.hpp"
#include "attain/catalog.hpp"

namespace attain {

struct LayerSpec {
  std::string model;  // bundled name or config path
  PassSpec pass;
};
// "MODEL:PHASE:TOKENS" (e.g. deepseek-v3:decode:32); context and dtype from the flags.
// Throws InputError naming the bad part.
LayerSpec parse_layer_spec(std::string_view text, std::int64_t context, DType dtype);

struct LayerOp {
  CatalogOp op;
  std::string role;  // q_b, router, experts_down, ...
  int stage = 0;     // ops with the same stage are independent
};
std::vector<LayerOp> layer_ops(const ModelConfig& cfg, const PassSpec& pass);

struct LayerResult {
  std::string backend;
  std::string status = "ok";  // ok | unsupported | wrong | error
  std::string reason;
  double median_s = 0, min_s = 0, iqr_s = 0;
  int reps = 0;
  int regions = 0;  // parallel regions (steps) one layer run takes
  bool verified = false;
};
// Times the layer on each backend (cfg.backends; "attain:auto" runs stages grouped). Every
// op's output is verified after one layer run before timing.
std::vector<LayerResult> run_layer(const std::vector<LayerOp>& ops, const BenchConfig& cfg);

}  // namespace attain
