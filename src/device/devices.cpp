// The device database: data/devices/<id>.json, one file per chip, every number with a source.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "attain/device.hpp"
#include "attain/files.hpp"
#include "device/probe.hpp"

namespace attain {

namespace {

using nlohmann::json;

const std::set<std::string, std::less<>> kPeakDtypes = {"fp64", "fp32", "tf32", "bf16",
                                                        "fp16", "fp8",  "int8", "fp4"};
const std::set<std::string, std::less<>> kKinds = {"gpu", "npu", "cpu"};
const std::set<std::string, std::less<>> kKeys = {"id",
                                                  "name",
                                                  "vendor",
                                                  "kind",
                                                  "peak_tflops",
                                                  "mem_bandwidth_gbps",
                                                  "mem_capacity_gb",
                                                  "interconnect",
                                                  "tdp_w",
                                                  "training_efficiency",
                                                  "sources",
                                                  "notes"};

std::string join(const std::set<std::string, std::less<>>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

struct Reader {
  const json& j;
  std::string_view origin;

  [[noreturn]] void fail(const std::string& msg) const {
    throw InputError(fmt::format("{}: {}", origin, msg));
  }
  const json& field(const char* key) const {
    if (!j.contains(key)) fail(fmt::format("missing field '{}'", key));
    return j.at(key);
  }
  std::string text(const json& v, const std::string& key) const {
    if (!v.is_string() || v.get<std::string>().empty())
      fail(fmt::format("field '{}' must be a non-empty string", key));
    return v.get<std::string>();
  }
  double number(const json& v, const std::string& key) const {
    if (!v.is_number())
      fail(fmt::format("field '{}' must be a number (got {})", key, v.type_name()));
    const double x = v.get<double>();
    if (!(x > 0) || !std::isfinite(x))
      fail(fmt::format("field '{}' must be positive (got {})", key, x));
    return x;
  }
};

std::filesystem::path devices_dir() {
  if (const char* env = std::getenv("ATTAIN_DATA_DIR"); env && *env)
    return std::filesystem::path(env) / "devices";
  return std::filesystem::path(ATTAIN_DATA_DIR) / "devices";
}

std::string read_file(const std::filesystem::path& p) {
  return read_input_file(p, kMaxConfigBytes, "device file");
}

std::vector<std::filesystem::path> device_files() {
  const auto dir = devices_dir();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(
        fmt::format("device directory {} does not exist (set ATTAIN_DATA_DIR to the "
                    "folder holding devices/)",
                    dir.string()));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

double DeviceSpec::peak(DType dt) const {
  const auto it = peak_tflops.find(std::string(dtype_name(dt)));
  return it == peak_tflops.end() ? 0.0 : it->second;
}

namespace {

std::string gap_text(const DeviceSpec& d, const std::string& name) {
  const auto it = d.peak_absent.find(name);
  if (it == d.peak_absent.end()) return "not listed in the device file";
  const auto src = d.sources.find("peak_tflops." + name);
  return src == d.sources.end() ? it->second : fmt::format("{} ({})", it->second, src->second);
}

}  // namespace

std::string DeviceSpec::peak_gap(DType dt) const {
  return gap_text(*this, std::string(dtype_name(dt)));
}

void assume_peak(DeviceSpec& d, std::string_view rule) {
  const auto bad = [&](const std::string& why) {
    throw InputError(fmt::format(
        "--assume-peak '{}': {} (forms: bf16=fp8/2, bf16=fp8*0.5, bf16=500)", excerpt(rule), why));
  };
  const auto eq = rule.find('=');
  if (eq == std::string_view::npos) bad("no '='");
  const std::string dt(rule.substr(0, eq));
  const std::string rhs(rule.substr(eq + 1));
  if (!kPeakDtypes.count(dt))
    bad(fmt::format("unknown dtype '{}' (known: {})", dt, join(kPeakDtypes)));
  if (const auto it = d.peak_tflops.find(dt); it != d.peak_tflops.end())
    bad(fmt::format("{} lists a {} peak of {:g} TFLOP/s; an assumption only fills a gap", d.id, dt,
                    it->second));
  if (const auto it = d.peak_absent.find(dt);
      it != d.peak_absent.end() && it->second == kPeakNotSupported)
    bad(fmt::format("{} does not support {}: {}", d.id, dt, gap_text(d, dt)));
  // rhs: a number, or <dtype> followed by /N or *F.
  const auto op = rhs.find_first_of("/*");
  const std::string base = rhs.substr(0, op);
  auto number = [&](const std::string& t) {
    double x = 0;
    std::size_t used = 0;
    try {
      x = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t.size() || !(x > 0) || !std::isfinite(x))
      bad(fmt::format("'{}' is not a positive number", excerpt(t)));
    return x;
  };
  double value = 0;
  std::string how;
  if (kPeakDtypes.count(base)) {
    const auto from = d.peak_tflops.find(base);
    if (from == d.peak_tflops.end())
      bad(fmt::format("{} lists no {} peak to derive from", d.id, base));
    if (op == std::string::npos) bad(fmt::format("'{}' needs /N or *F", base));
    const double f = number(rhs.substr(op + 1));
    value = rhs[op] == '/' ? from->second / f : from->second * f;
    how =
        fmt::format("the {} peak {:g} {} {:g}", base, from->second, rhs[op] == '/' ? "/" : "x", f);
  } else {
    if (op != std::string::npos) bad(fmt::format("unknown dtype '{}'", excerpt(base)));
    value = number(rhs);
    how = "given";
  }
  const auto gap = d.peak_absent.find(dt);
  const std::string vendor = gap == d.peak_absent.end() ? "not listed" : gap->second;
  const std::string label =
      fmt::format("ASSUMED (--assume-peak {}): {:g} TFLOP/s, {}; the vendor's figure: {}", rule,
                  value, how, vendor);
  d.peak_tflops[dt] = value;
  d.peak_absent.erase(dt);
  d.sources["peak_tflops." + dt] = label;
  d.assumptions.push_back(label);
}

DeviceSpec parse_device(std::string_view json_text, std::string_view origin) {
  const json j = parse_json_input(json_text, origin);
  if (!j.is_object())
    throw InputError(fmt::format("{}: a device file holds one JSON object", origin));
  const Reader r{j, origin};
  for (const auto& [key, _] : j.items())
    if (!kKeys.count(key)) r.fail(fmt::format("unknown field '{}' (known: {})", key, join(kKeys)));

  DeviceSpec d;
  d.id = r.text(r.field("id"), "id");
  d.name = r.text(r.field("name"), "name");
  d.vendor = r.text(r.field("vendor"), "vendor");
  d.kind = r.text(r.field("kind"), "kind");
  if (!kKinds.count(d.kind))
    r.fail(fmt::format("kind '{}' is not one of {}", d.kind, join(kKinds)));

  const json& peaks = r.field("peak_tflops");
  if (!peaks.is_object() || peaks.empty())
    r.fail("field 'peak_tflops' must be an object of dense TFLOP/s by dtype");
  for (const auto& [dt, v] : peaks.items()) {
    if (!kPeakDtypes.count(dt))
      r.fail(fmt::format("peak_tflops has unknown dtype '{}' (known: {})", dt, join(kPeakDtypes)));
    if (v.is_string()) {
      const std::string gap = v.get<std::string>();
      if (gap != kPeakNotPublished && gap != kPeakNotSupported)
        r.fail(fmt::format("field 'peak_tflops.{}' must be a number, \"{}\" or \"{}\" (got \"{}\")",
                           dt, kPeakNotPublished, kPeakNotSupported, excerpt(gap)));
      d.peak_absent[dt] = gap;
    } else {
      d.peak_tflops[dt] = r.number(v, "peak_tflops." + dt);
    }
  }
  if (d.peak_tflops.empty()) r.fail("field 'peak_tflops' lists no number: no op could be judged");
  d.mem_bandwidth_gbps = r.number(r.field("mem_bandwidth_gbps"), "mem_bandwidth_gbps");
  d.mem_capacity_gb = r.number(r.field("mem_capacity_gb"), "mem_capacity_gb");
  const json& link = r.field("interconnect");
  if (!link.is_object()) r.fail("field 'interconnect' must be an object {\"name\", \"gbps\"}");
  const Reader lr{link, origin};
  d.interconnect = r.text(lr.field("name"), "interconnect.name");
  d.interconnect_gbps = r.number(lr.field("gbps"), "interconnect.gbps");
  if (j.contains("tdp_w")) d.tdp_w = r.number(j.at("tdp_w"), "tdp_w");
  if (j.contains("training_efficiency")) {
    d.training_efficiency = r.number(j.at("training_efficiency"), "training_efficiency");
    if (!(d.training_efficiency <= 1))
      r.fail(fmt::format("field 'training_efficiency' must be a fraction in (0, 1] (got {:g})",
                         d.training_efficiency));
  }
  if (j.contains("notes")) (void)r.text(j.at("notes"), "notes");

  // Every number needs a source: "peak_tflops.<dtype>", "mem_bandwidth_gbps",
  // "mem_capacity_gb", "interconnect", "tdp_w", "training_efficiency".
  const json& src = r.field("sources");
  if (!src.is_object())
    r.fail("field 'sources' must be an object: field -> where the number comes from");
  for (const auto& [key, v] : src.items()) d.sources[key] = r.text(v, "sources." + key);
  std::vector<std::string> need = {"mem_bandwidth_gbps", "mem_capacity_gb", "interconnect"};
  for (const auto& [dt, _] : d.peak_tflops) need.push_back("peak_tflops." + dt);
  for (const auto& [dt, _] : d.peak_absent) need.push_back("peak_tflops." + dt);
  if (d.tdp_w > 0) need.push_back("tdp_w");
  if (d.training_efficiency > 0) need.push_back("training_efficiency");
  for (const auto& key : need)
    if (!d.sources.count(key)) r.fail(fmt::format("'{}' has no entry in 'sources'", key));
  return d;
}

std::vector<DeviceSpec> load_devices() {
  std::vector<DeviceSpec> out;
  for (const auto& p : device_files()) {
    DeviceSpec d = parse_device(read_file(p), p.string());
    if (d.id != p.stem().string())
      throw InputError(fmt::format("{}: id '{}' does not match the file name", p.string(), d.id));
    out.push_back(std::move(d));
  }
  return out;
}

DeviceSpec load_device(std::string_view id) {
  if (id == "host") return probe::host_device(probe_host());
  // A path (a '/' or a .json ending): the user's own device file, in the database's schema.
  if (id.find('/') != std::string_view::npos ||
      (id.size() > 5 && id.substr(id.size() - 5) == ".json")) {
    const std::filesystem::path p{std::string(id)};
    return parse_device(read_input_file(p, kMaxConfigBytes, "device file"), p.string());
  }
  std::string known = "host";
  for (const auto& p : device_files()) {
    if (p.stem().string() == id) {
      DeviceSpec d = parse_device(read_file(p), p.string());
      if (d.id != id)
        throw InputError(fmt::format("{}: id '{}' does not match the file name", p.string(), d.id));
      return d;
    }
    known += ", " + p.stem().string();
  }
  throw InputError(
      fmt::format("unknown device '{}' (known: {}; or a device file's path)", excerpt(id), known));
}

DeviceSpec load_device(std::string_view id, const std::vector<std::string>& assume_peaks) {
  DeviceSpec d = load_device(id);
  for (const auto& rule : assume_peaks) assume_peak(d, rule);
  return d;
}

namespace probe {

DeviceSpec host_device(const HostCeilings& c) {
  DeviceSpec d;
  d.id = "host";
  d.name = c.cpu_model;
  d.vendor = "this machine";
  d.kind = "cpu";
  d.peak_tflops["fp32"] = c.fma_gflops_all / 1e3;
  d.mem_bandwidth_gbps = c.read_gbps_all;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    d.mem_capacity_gb = static_cast<double>(pages) * static_cast<double>(page) / 1e9;
  const std::string when = fmt::format("attain probe, {}", c.measured_at);
  d.sources["peak_tflops.fp32"] =
      fmt::format("{}: {} FMA loop, {} threads", when, c.fma_isa, c.cores);
  d.sources["mem_bandwidth_gbps"] = fmt::format("{}: streaming read, {} threads", when, c.cores);
  d.sources["mem_capacity_gb"] = "sysconf(_SC_PHYS_PAGES)";
  return d;
}

}  // namespace probe

}  // namespace attain

namespace attain {

namespace {

// Numbers where the device lists them, the stated gaps as their words: the file's own form.
nlohmann::json peaks_json(const DeviceSpec& d) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [dt, gap] : d.peak_absent) j[dt] = gap;
  for (const auto& [dt, v] : d.peak_tflops) j[dt] = v;
  return j;
}

}  // namespace

nlohmann::json devices_json(const std::vector<DeviceSpec>& devs) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& d : devs)
    arr.push_back(
        {{"id", d.id},
         {"name", d.name},
         {"vendor", d.vendor},
         {"kind", d.kind},
         {"peak_tflops", peaks_json(d)},
         {"mem_bandwidth_gbps", d.mem_bandwidth_gbps},
         {"mem_capacity_gb", d.mem_capacity_gb},
         {"interconnect", d.interconnect},
         {"interconnect_gbps", d.interconnect_gbps},
         {"tdp_w", d.tdp_w},
         {"training_efficiency", d.training_efficiency > 0 ? nlohmann::json(d.training_efficiency)
                                                           : nlohmann::json(nullptr)},
         {"sources", d.sources}});
  return arr;
}

std::string devices_table(const std::vector<DeviceSpec>& devs) {
  std::string s = fmt::format("{:<14} {:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>10}\n",
                              "id", "name", "fp32 TF", "bf16 TF", "fp16 TF", "fp8 TF", "fp4 TF",
                              "HBM GB/s", "HBM GB", "link GB/s");
  auto tf = [](const DeviceSpec& d, const char* k) {
    if (auto it = d.peak_tflops.find(k); it != d.peak_tflops.end())
      return fmt::format("{:.0f}", it->second);
    if (auto it = d.peak_absent.find(k); it != d.peak_absent.end())
      return std::string(it->second == kPeakNotSupported ? "n/s" : "n/p");
    return std::string("-");
  };
  for (const auto& d : devs)
    s += fmt::format("{:<14} {:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9.0f} {:>7.0f} {:>10.0f}\n",
                     d.id, d.name, tf(d, "fp32"), tf(d, "bf16"), tf(d, "fp16"), tf(d, "fp8"),
                     tf(d, "fp4"), d.mem_bandwidth_gbps, d.mem_capacity_gb, d.interconnect_gbps);
  s += "dense peaks; n/p: not published by the vendor; n/s: not supported; -: not listed; "
       "sources: attain devices --json (field 'sources')\n";
  return s;
}

}  // namespace attain
