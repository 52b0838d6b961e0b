// The `attain moe` report, schema "attain.moe/1": the one place that writes it, reads it back
// and prints it as text.
#include <fmt/format.h>

#include <string>

#include "attain/files.hpp"
#include "attain/moe.hpp"
#include "core/json_fields.hpp"

namespace attain::moe {

using json_io::get;
using json_io::get_optional;
using json_io::num;
using nlohmann::json;

namespace {

json to_json(const TransferStats& s) {
  return {{"gbps", num(s.gbps)},
          {"latency_us", num(s.latency_us)},
          {"bandwidth_fraction", num(s.bandwidth_fraction)},
          {"transfer_us", num(s.transfer_us)},
          {"layout_us", num(s.layout_us)},
          {"bytes", num(s.bytes)},
          {"end_to_end_fraction", num(s.end_to_end_fraction)}};
}

TransferStats stats_from_json(const json& j, const std::string& where) {
  TransferStats s;
  s.gbps = get<double>(j, "gbps", where, 0, true);
  s.latency_us = get<double>(j, "latency_us", where, 0, true);
  s.bandwidth_fraction = get<double>(j, "bandwidth_fraction", where, 0, true);
  s.transfer_us = get<double>(j, "transfer_us", where, 0, true);
  s.layout_us = get<double>(j, "layout_us", where, 0, true);
  s.bytes = get<double>(j, "bytes", where, 0, true);
  s.end_to_end_fraction = get<double>(j, "end_to_end_fraction", where, 0, true);
  return s;
}

}  // namespace

json to_json(const MoeReport& rep) {
  const MoeBenchConfig& c = rep.config;
  const MoeBenchResult& r = rep.result;
  return {
      {"schema", kMoeSchema},
      {"attain_version", ATTAIN_VERSION},
      {"created", rep.created},
      {"command", rep.command},
      {"ranks", r.ranks},
      {"transport", r.transport},
      {"mode", mode_name(c.mode)},
      {"dtype", payload_name(c.dtype)},
      {"tokens", c.tokens},
      {"hidden", c.hidden},
      {"experts", c.gate.experts},
      {"topk", c.gate.topk},
      {"inter", c.inter},
      {"reps", c.reps},
      {"threads", c.threads},
      {"skew", c.skew},
      {"seed", c.seed},
      {"expert_backend", r.expert_backend},
      {"dispatch", to_json(r.dispatch)},
      {"combine", to_json(r.combine)},
      {"notify_us", num(r.notify_us)},
      {"copy_gbps", num(r.copy_gbps)},
      {"copy_gbps_probe", num(r.copy_gbps_probe)},
      {"copy_gbps_memcpy", num(r.copy_gbps_memcpy)},
      {"overlap",
       {{"serial_ms", num(r.serial_ms)},
        {"overlapped_ms", num(r.overlapped_ms)},
        {"comm_ms", num(r.comm_ms)},
        {"hidden_fraction", num(r.hidden_fraction)}}},
      {"contention",
       {{"gemm_alone_ms", num(r.gemm_alone_ms)},
        {"gemm_contended_ms", num(r.gemm_contended_ms)},
        {"gemm_slowdown", num(r.gemm_slowdown)},
        {"comm_slowdown", num(r.comm_slowdown)}}},
      {"gemm_gflops", num(r.gemm_gflops)},
      {"skipped", r.skipped},
      {"verified", r.verified},
      {"verification", r.verification},
  };
}

MoeReport moe_report_from_json(const json& j, std::string_view origin) {
  json_io::check_schema(j, kMoeSchema, origin);
  const std::string o(origin);
  MoeReport rep;
  MoeBenchConfig& c = rep.config;
  MoeBenchResult& r = rep.result;
  rep.created = get<std::string>(j, "created", o, "", false);
  rep.command = get<std::string>(j, "command", o, "", false);
  r.ranks = get<int>(j, "ranks", o, 1, true);
  r.transport = get<std::string>(j, "transport", o, "", true);
  const auto mode = parse_mode(get<std::string>(j, "mode", o, "", true));
  const auto dtype = parse_payload(get<std::string>(j, "dtype", o, "", true));
  if (!mode || !dtype)
    throw InputError(fmt::format("{}: mode or dtype not one attain knows", origin));
  c.mode = *mode;
  c.dtype = *dtype;
  c.tokens = get<std::int64_t>(j, "tokens", o, 0, true);
  c.hidden = get<std::int64_t>(j, "hidden", o, 0, true);
  c.gate.experts = get<int>(j, "experts", o, 0, true);
  c.gate.topk = get<int>(j, "topk", o, 0, true);
  c.inter = get<std::int64_t>(j, "inter", o, 0, true);
  c.reps = get<int>(j, "reps", o, c.reps, false);
  c.threads = get<int>(j, "threads", o, c.threads, false);
  c.skew = get<double>(j, "skew", o, 0, false);
  c.seed = get<std::uint64_t>(j, "seed", o, c.seed, false);
  r.expert_backend = get<std::string>(j, "expert_backend", o, "", true);
  c.expert_backend = r.expert_backend;
  r.dispatch = stats_from_json(json_io::object(j, "dispatch", o), o + " dispatch");
  r.combine = stats_from_json(json_io::object(j, "combine", o), o + " combine");
  r.notify_us = get<double>(j, "notify_us", o, 0, false);
  r.copy_gbps = get<double>(j, "copy_gbps", o, 0, true);
  r.copy_gbps_probe = get<double>(j, "copy_gbps_probe", o, 0, false);
  r.copy_gbps_memcpy = get<double>(j, "copy_gbps_memcpy", o, 0, false);
  const json& ov = json_io::object(j, "overlap", o);
  r.serial_ms = get_optional(ov, "serial_ms", o);
  r.overlapped_ms = get_optional(ov, "overlapped_ms", o);
  r.comm_ms = get_optional(ov, "comm_ms", o);
  r.hidden_fraction = get_optional(ov, "hidden_fraction", o);
  const json& ct = json_io::object(j, "contention", o);
  r.gemm_alone_ms = get_optional(ct, "gemm_alone_ms", o);
  r.gemm_contended_ms = get_optional(ct, "gemm_contended_ms", o);
  r.gemm_slowdown = get_optional(ct, "gemm_slowdown", o);
  r.comm_slowdown = get_optional(ct, "comm_slowdown", o);
  r.gemm_gflops = get<double>(j, "gemm_gflops", o, 0, false);
  r.skipped = get<std::string>(j, "skipped", o, "", false);
  r.verified = get<bool>(j, "verified", o, false, true);
  r.verification = get<std::string>(j, "verification", o, "", false);
  return rep;
}

MoeReport read_moe_report(const std::filesystem::path& file) {
  const std::string text = read_input_file(file, kMaxResultsBytes, "moe report");
  return moe_report_from_json(parse_json_input(text, file.string()), file.string());
}

std::string moe_report_text(const MoeReport& rep) {
  const MoeBenchConfig& c = rep.config;
  const MoeBenchResult& r = rep.result;
  std::string s = fmt::format(
      "moe        {} {}, {} rank(s) over {}, {} tokens/rank, hidden {}, {} experts top-{}, "
      "expert GEMM {}\n",
      mode_name(c.mode), payload_name(c.dtype), r.ranks, r.transport, c.tokens, c.hidden,
      c.gate.experts, c.gate.topk, r.expert_backend);
  for (const auto& [name, st] :
       {std::pair{"dispatch", r.dispatch}, std::pair{"combine", r.combine}})
    s += fmt::format(
        "{:<10} {:9.1f} us  transfer {:9.1f} us  layout {:8.1f} us  {:7.2f} GB/s crossed  "
        "bandwidth_fraction {:.2f} (end to end {:.2f})\n",
        name, st.latency_us, st.transfer_us, st.layout_us, st.gbps, st.bandwidth_fraction,
        st.end_to_end_fraction);
  s += fmt::format(
      "           (median of {} reps, slowest rank; bandwidth_fraction = 2 x bytes crossed / "
      "transfer time / copy bandwidth {:.1f} GB/s)\n",
      c.reps, r.copy_gbps);
  if (c.mode == Mode::normal)
    s += fmt::format("notify     {:9.1f} us  (layout exchange, once per routing)\n", r.notify_us);
  if (r.hidden_fraction && r.serial_ms && r.overlapped_ms && r.comm_ms)
    s += fmt::format(
        "overlap    serial {:.2f} ms, overlapped {:.2f} ms; one micro-batch's communication "
        "{:.2f} ms; hidden_fraction {:.2f}\n",
        *r.serial_ms, *r.overlapped_ms, *r.comm_ms, *r.hidden_fraction);
  if (r.gemm_slowdown && r.gemm_alone_ms && r.gemm_contended_ms && r.comm_slowdown)
    s += fmt::format(
        "contention expert MLP {:.2f} ms alone ({:.1f} GFLOP/s), {:.2f} ms under "
        "dispatch/combine traffic: gemm_slowdown {:.2f}, traffic slowdown {:.2f}\n",
        *r.gemm_alone_ms, r.gemm_gflops, *r.gemm_contended_ms, *r.gemm_slowdown, *r.comm_slowdown);
  if (!r.skipped.empty()) s += fmt::format("skipped    overlap/contention: {}\n", r.skipped);
  s += fmt::format("verified   {}: {}\n", r.verified ? "yes" : "NO", r.verification);
  return s;
}

}  // namespace attain::moe
