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

}  // namespace attain::moe
