// The parts of the MoE layer's API that do not depend on MPI, built with and without it.
#include <cstdio>
#include <cstdlib>

#include "attain/moe.hpp"

namespace attain::moe {

void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

std::string_view mode_name(Mode m) {
  return m == Mode::normal ? "normal" : "low-latency";
}

std::string_view transport_name(Transport t) {
  switch (t) {
    case Transport::shm:
      return "shm";
    case Transport::rma:
      return "rma";
    default:
      return "auto";
  }
}

std::optional<Mode> parse_mode(std::string_view s) {
  if (s == "normal") return Mode::normal;
  if (s == "low-latency" || s == "ll") return Mode::low_latency;
  return std::nullopt;
}

std::optional<Transport> parse_transport(std::string_view s) {
  if (s == "auto") return Transport::automatic;
  if (s == "shm") return Transport::shm;
  if (s == "rma") return Transport::rma;
  return std::nullopt;
}

}  // namespace attain::moe
