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
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad input like any other: one line, exit 2, quoting at most 160 characters of it.
    std::string what = e.what();
    for (char& ch : what)
      if (ch == '\n') ch = ' ';
    if (what.size() > 160) what = what.substr(0, 160) + "...";
    fmt::print(stderr, "attain: error: {} (see --help)\n", what);
    return 2;
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
