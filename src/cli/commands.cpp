#include "cli/commands.hpp"

#include <map>

namespace attain::cli {

std::vector<Registrar>& commands() {
  static std::vector<Registrar> list;
  return list;
}

bool add_command(Registrar r) {
  commands().push_back(std::move(r));
  return true;
}

namespace {
std::map<const CLI::App*, std::function<int()>>& actions() {
  static std::map<const CLI::App*, std::function<int()>> m;
  return m;
}
}  // namespace

void set_action(CLI::App* sub, std::function<int()> action) {
  actions()[sub] = std::move(action);
}

int run_selected(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    auto it = actions().find(sub);
    if (it != actions().end()) return it->second();
  }
  return 1;
}

}  // namespace attain::cli
