#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <system_error>

#include "attain/files.hpp"
#include "attain/op.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace {

// Every error is one line, and a message that quotes a huge input is cut: the user typed it and
// needs only enough to find it.
std::string one_line(std::string what, std::size_t max) {
  for (char& ch : what)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (what.size() > max) what = what.substr(0, max) + "...";
  return what;
}

}  // namespace

// Exit codes, the same for every subcommand: 0 done, 2 bad input (flags, files, specs), 3 a run
// that could not finish (a peer rank timed out, the disk filled), 1 an internal error.
int main(int argc, char** argv) {
  CLI::App app{
      "attain: how much of a chip's attainable performance its software reaches on LLM matrix ops"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("attain ") + ATTAIN_VERSION);
  app.footer(
      "Exit status: 0 done, 2 bad input, 3 a run that could not finish (a peer rank timed "
      "out, the disk filled), 1 an internal error.");
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
    fmt::print(stderr, "attain: error: {} (see --help)\n", one_line(e.what(), 160));
    return 2;
  }
  try {
    return attain::cli::run_selected(app);
  } catch (const attain::InputError& e) {
    fmt::print(stderr, "attain: error: {}\n", one_line(e.what(), 400));
    return 2;
  } catch (const attain::RuntimeFailure& e) {
    fmt::print(stderr, "attain: error: {}\n", one_line(e.what(), 400));
    return 3;
  } catch (const std::system_error& e) {
    // Output the system refused (stdout on a full disk, a closed pipe): the run, not the input.
    fmt::print(stderr, "attain: error: {}\n", one_line(e.what(), 400));
    return attain::output_refused(e.code().value()) ? 3 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attain: error: {}\n", one_line(e.what(), 400));
    return 1;
  }
}
