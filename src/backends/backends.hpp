// Factories of the backends compiled into libattain; registry.cpp lists them in order.
#pragma once

#include <memory>
#include <string>

#include "attain/backend.hpp"

namespace attain::backends {

// Each returns nullptr and sets *why when the library cannot be loaded on this machine.
std::unique_ptr<Backend> make_attain(std::string* why);
std::unique_ptr<Backend> make_openblas(std::string* why);
std::unique_ptr<Backend> make_blis(std::string* why);
std::unique_ptr<Backend> make_onednn(std::string* why);
std::unique_ptr<Backend> make_reference(std::string* why);
#ifdef ATTAIN_HAVE_CUDA
// Both return nullptr with why = "no CUDA device: ..." where no GPU is usable.
std::unique_ptr<Backend> make_cublaslt(std::string* why);
std::unique_ptr<Backend> make_attain_cuda(std::string* why);
#endif

}  // namespace attain::backends
