// Alpha-beta cost of the collectives: time = messages x alpha + bytes on the wire / bandwidth.
// Ring algorithms move (n-1)/n of the buffer per phase; a double binary tree takes
// 2 log2(n) latency steps and, pipelined, moves about the whole buffer up and down.
#include <cmath>

#include "attain/cluster.hpp"

namespace attain::cluster {

namespace {
double alpha(const Link& l) {
  return l.latency_us * 1e-6;
}
double beta(double bytes, const Link& l) {
  return l.gbps > 0 ? bytes / (l.gbps * 1e9) : 0.0;
}
double frac(int n) {
  return static_cast<double>(n - 1) / static_cast<double>(n);
}
}  // namespace

double ring_allreduce_s(double bytes, int ranks, const Link& l) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return 2.0 * (ranks - 1) * alpha(l) + 2.0 * frac(ranks) * beta(bytes, l);
}

double tree_allreduce_s(double bytes, int ranks, const Link& l) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return 2.0 * std::ceil(std::log2(static_cast<double>(ranks))) * alpha(l) + 2.0 * beta(bytes, l);
}

double allgather_s(double bytes, int ranks, const Link& l) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return (ranks - 1) * alpha(l) + frac(ranks) * beta(bytes, l);
}

double reduce_scatter_s(double bytes, int ranks, const Link& l) {
  return allgather_s(bytes, ranks, l);
}

double alltoall_s(double bytes, int ranks, const Link& l) {
  if (ranks <= 1 || bytes <= 0) return 0;
  return (ranks - 1) * alpha(l) + frac(ranks) * beta(bytes, l);
}

double p2p_s(double bytes, const Link& l) {
  if (bytes <= 0) return 0;
  return alpha(l) + beta(bytes, l);
}

}  // namespace attain::cluster
