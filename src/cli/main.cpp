#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "attain/op.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "attain: how much of a chip's attainable performance its software reaches on LLM matrix ops"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("attain ") + ATTAIN_VERSION);
  attain::cli::set_command_line(argc, argv);
  for (const auto& reg : attain::cli::commands()) reg(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return attain::cli::run_selected(app);
  } catch (const attain::InputError& e) {
    fmt::print(stderr, "attain: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attain: error: {}\n", e.what());
    return 1;
  }
}
