// Each subcommand lives in its own file (src/cli/<name>.cpp) and registers itself here.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace attain::cli {

using Registrar = std::function<void(CLI::App&)>;
std::vector<Registrar>& commands();

// A subcommand file does: static const bool reg = add_command([](CLI::App& app) {...});
// and sets the subcommand's callback-free action with set_action().
bool add_command(Registrar r);

// The action of a subcommand; returns the exit code.
void set_action(CLI::App* sub, std::function<int()> action);
int run_selected(CLI::App& app);

}  // namespace attain::cli
