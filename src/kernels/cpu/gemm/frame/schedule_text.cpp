// Schedules as text: the one-line description of a resolved schedule, and the `field=value`
// form that --schedule, the tuning cache and the tuner's reports read and write.
#include <fmt/format.h>

#include <charconv>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attain/tile.hpp"
#include "kernels/cpu/gemm/dispatch.hpp"

namespace attain::gemm {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::automatic:
      return "auto";
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

std::string_view path_name(Path p) {
  switch (p) {
    case Path::automatic:
      return "auto";
    case Path::packed:
      return "packed";
    case Path::decode:
      return "decode";
    case Path::direct:
      return "direct";
  }
  return "?";
}

std::string_view fuse_name(Fuse f) {
  switch (f) {
    case Fuse::automatic:
      return "auto";
    case Fuse::on:
      return "1";
    case Fuse::off:
      return "0";
  }
  return "?";
}

std::string_view order_name(Order o) {
  switch (o) {
    case Order::automatic:
      return "auto";
    case Order::mk:
      return "mk";
    case Order::km:
      return "km";
  }
  return "?";
}

std::string_view form_name(Form f) {
  switch (f) {
    case Form::single:
      return "gemm";
    case Form::batched:
      return "batched";
    case Form::grouped_contiguous:
      return "grouped_contiguous";
    case Form::grouped_masked:
      return "grouped_masked";
  }
  return "?";
}

std::string describe(const Schedule& s) {
  const auto& f = detail::family(s.isa == Isa::automatic ? detected_isa() : s.isa);
  // The direct path has no MC / NC blocks and its own kernel (W rows x A rows).
  std::string d =
      s.path == Path::direct
          ? fmt::format("path=direct{} kernel={}_direct_{}x{} kc={} threads={} grid={}x{}",
                        s.swap ? " swap" : "", isa_name(f.isa), f.direct_rows, f.direct_panel, s.kc,
                        s.threads, s.threads_m, s.threads_n)
          : fmt::format("path={}{} kernel={} mc={} nc={} kc={} threads={} grid={}x{}",
                        path_name(s.path), s.swap ? " swap" : "", f.name, s.mc, s.nc, s.kc,
                        s.threads, s.threads_m, s.threads_n);
  if (s.path != Path::packed && s.path != Path::direct) {
    d += fmt::format(" k_tile={} split_k={}", s.decode_k_tile, s.split_k);
  } else if (s.split_k > 1) {
    d += fmt::format(" split_k={}", s.split_k);
  }
  if (s.path == Path::packed) d += fmt::format(" order={}", order_name(s.order));
  d += fmt::format(" stages={}", s.stages);
  return d;
}

std::string to_string(const Schedule& s) {
  return fmt::format(
      "path={} isa={} mc={} nc={} kc={} threads={} grid={}x{} k_tile={} split_k={} stages={} "
      "fuse={} swap={} order={}",
      path_name(s.path), isa_name(s.isa), s.mc, s.nc, s.kc, s.threads, s.threads_m, s.threads_n,
      s.decode_k_tile, s.split_k, s.stages, fuse_name(s.fuse_items), s.swap ? 1 : 0,
      order_name(s.order));
}

Schedule parse_schedule(std::string_view text) {
  Schedule s;
  auto bad = [](std::string_view what) {  // quoting at most 80 characters of it
    throw std::invalid_argument(fmt::format("schedule: bad field '{}{}'", what.substr(0, 80),
                                            what.size() > 80 ? "..." : ""));
  };
  auto to_int = [&](std::string_view field, std::string_view v) {
    int x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < 0) bad(field);
    return x;
  };
  // An enum field by the name its *_name() function gives each value.
  auto by_name = [&]<class E>(std::string_view field, std::string_view v,
                              std::initializer_list<E> all, std::string_view (*name_of)(E)) {
    for (E e : all)
      if (v == name_of(e)) return e;
    bad(field);
    return *all.begin();  // not reached: bad() throws
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos >= text.size()) break;
    std::size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view field = text.substr(pos, end - pos);
    pos = end;
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) bad(field);
    const std::string_view key = field.substr(0, eq), v = field.substr(eq + 1);
    if (key == "path") {
      s.path =
          by_name(field, v, {Path::automatic, Path::packed, Path::decode, Path::direct}, path_name);
    } else if (key == "isa") {
      s.isa = by_name(field, v, {Isa::automatic, Isa::scalar, Isa::avx2, Isa::avx512}, isa_name);
    } else if (key == "mc") {
      s.mc = to_int(field, v);
    } else if (key == "nc") {
      s.nc = to_int(field, v);
    } else if (key == "kc") {
      s.kc = to_int(field, v);
    } else if (key == "threads") {
      s.threads = to_int(field, v);
    } else if (key == "grid") {
      const std::size_t x = v.find('x');
      if (x == std::string_view::npos) bad(field);
      s.threads_m = to_int(field, v.substr(0, x));
      s.threads_n = to_int(field, v.substr(x + 1));
    } else if (key == "k_tile") {
      s.decode_k_tile = to_int(field, v);
    } else if (key == "split_k") {
      s.split_k = to_int(field, v);
    } else if (key == "stages") {
      s.stages = to_int(field, v);
    } else if (key == "fuse") {
      s.fuse_items = by_name(field, v, {Fuse::automatic, Fuse::on, Fuse::off}, fuse_name);
    } else if (key == "swap") {
      s.swap = to_int(field, v) != 0;
    } else if (key == "order") {
      s.order = by_name(field, v, {Order::automatic, Order::mk, Order::km}, order_name);
    } else {
      bad(field);
    }
  }
  check_schedule_ranges(s);
  return s;
}

}  // namespace attain::gemm
