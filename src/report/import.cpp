// CSV timings measured elsewhere -> a results file judged against a device's roofline. An op is
// named by its spec (what `attain catalog --csv` writes) or by its shape columns.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "attain/report.hpp"

namespace attain {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One CSV record: commas separate, double quotes enclose (a doubled quote is a quote).
// Throws InputError on an unterminated quote.
std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
        cur += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (quoted) throw InputError("unterminated quote");
  out.push_back(trim(cur));
  return out;
}

std::int64_t to_int(const std::string& s, const char* col) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v <= 0)
    throw InputError(fmt::format("{} '{}' is not a positive integer", col, s));
  return v;
}

std::int64_t to_count(const std::string& s, const char* col) {  // 0 allowed
  return s == "0" ? 0 : to_int(s, col);
}

double to_positive(const std::string& s, const char* col) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !(v > 0) || !std::isfinite(v))
    throw InputError(fmt::format("{} '{}' is not a positive number", col, s));
  return v;
}

// The op of a `spec` field; a dtype column, where given, must agree with it.
Op op_of_spec(const std::string& spec, const std::string& dtype) {
  Op op = Op::parse(spec);
  if (!dtype.empty()) {
    const auto dt = parse_dtype(lower(dtype));
    if (!dt || *dt != op.dtype)
      throw InputError(fmt::format("dtype '{}' differs from the spec's ({})", excerpt(dtype),
                                   dtype_name(op.dtype)));
  }
  return op;
}

// The op of the shape columns: kind (default gemm), m, n, k, dtype, groups, batch, layout,
// skew; mla_decode: b, s, h, s_q.
template <class Get>
Op op_of_columns(Get&& get) {
  Op op;
  const std::string kind = lower(get("kind"));
  if (const auto k = parse_kind(kind.empty() ? "gemm" : kind))
    op.kind = *k;
  else
    throw InputError(fmt::format("kind '{}' (known: gemm, grouped_gemm, batched_gemm, mla_decode)",
                                 excerpt(get("kind"))));
  const auto dt = parse_dtype(lower(get("dtype")));
  if (!dt)
    throw InputError(
        fmt::format("dtype '{}' (known: fp32, bf16, fp16, fp8)", excerpt(get("dtype"))));
  op.dtype = *dt;
  if (op.kind == OpKind::mla_decode) {
    op.b = to_int(get("b"), "b"), op.s = to_int(get("s"), "s"), op.h = to_int(get("h"), "h");
    if (!get("s_q").empty()) op.s_q = to_int(get("s_q"), "s_q");
  } else {
    op.m = to_int(get("m"), "m"), op.n = to_int(get("n"), "n"), op.k = to_int(get("k"), "k");
  }
  if (op.kind == OpKind::grouped_gemm) {
    op.groups = to_int(get("groups"), "groups");
    const std::string layout = lower(get("layout"));
    if (layout == "masked")
      op.layout = GroupedLayout::masked;
    else if (!layout.empty() && layout != "contiguous")
      throw InputError(
          fmt::format("layout '{}' (known: contiguous, masked)", excerpt(get("layout"))));
    if (!get("skew").empty()) {
      const std::string sk = get("skew");
      double v = -1;
      const auto [p, ec] = std::from_chars(sk.data(), sk.data() + sk.size(), v);
      if (ec != std::errc() || p != sk.data() + sk.size() || !(v >= 0))
        throw InputError(fmt::format("skew '{}' is not a number of 0 or more", excerpt(sk)));
      op.skew = v;
    }
  }
  if (op.kind == OpKind::batched_gemm) op.batch = to_int(get("batch"), "batch");
  op.validate();
  return op;
}

}  // namespace

ImportOutcome import_csv(std::string_view text, const DeviceSpec& dev, const ImportOptions& opt) {
  const std::string origin = opt.origin.empty() ? "CSV" : opt.origin;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte-order mark
  // Lines with their numbers; blank lines and '#' comments are skipped.
  std::vector<std::pair<std::size_t, std::string>> lines;
  std::size_t no = 0, pos = 0;
  while (pos <= text.size()) {
    const auto nl = text.find('\n', pos);
    std::string line(
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    ++no;
    const std::string t = trim(line);
    if (!t.empty() && t[0] != '#') lines.push_back({no, line});
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  if (lines.empty())
    throw InputError(fmt::format("{}: empty file (no header row, no data)", origin));

  ImportOutcome out;
  std::map<std::string, std::size_t> col;
  std::vector<std::string> header;
  try {
    header = split_csv(lines[0].second);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: line {}: header: {}", origin, lines[0].first, e.what()));
  }
  // Columns read; columns known and left alone (the catalog CSV's derived figures, notes);
  // anything else is refused, so that a misspelt column cannot silently change an op.
  static const std::set<std::string> used = {
      "spec",   "m",     "n",      "k",       "dtype", "time_us", "tflops", "layer",
      "model",  "phase", "tokens", "context", "count", "kind",    "groups", "batch",
      "layout", "skew",  "b",      "s",       "h",     "s_q"};
  static const std::set<std::string> ignored = {"flops", "bytes", "notes"};
  static const std::set<std::string> shape = {"m",      "n",    "k", "kind", "groups", "batch",
                                              "layout", "skew", "b", "s",    "h",      "s_q"};
  std::vector<std::string> unknown;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const std::string h = lower(header[i]);
    if (ignored.count(h)) {
      out.ignored_columns.push_back(header[i]);
      continue;
    }
    if (!used.count(h)) {
      unknown.push_back(header[i]);
      continue;
    }
    if (!col.emplace(h, i).second)
      throw InputError(
          fmt::format("{}: line {}: column '{}' appears twice", origin, lines[0].first, h));
  }
  auto join = [](const auto& names) {
    std::string out_s;
    for (const auto& n : names) out_s += (out_s.empty() ? "" : ", ") + std::string(n);
    return out_s;
  };
  if (!unknown.empty())
    throw InputError(fmt::format("{}: line {}: unknown column(s): {} (known: {}; ignored: {})",
                                 origin, lines[0].first, excerpt(join(unknown)), join(used),
                                 join(ignored)));
  const bool by_spec = col.count("spec") > 0;
  // With a spec column the op comes from it; shape columns are then only checked for agreement
  // where they name the dtype, and otherwise left alone (said once).
  if (by_spec)
    for (const auto& c : shape)
      if (col.count(c)) out.ignored_columns.push_back(c + " (the spec column gives the op)");
  std::vector<std::string> missing;
  if (!by_spec) {
    const bool mla = (col.count("b") || col.count("s") || col.count("h")) && !col.count("m");
    for (const char* c : mla ? std::vector<const char*>{"b", "s", "h", "dtype"}
                             : std::vector<const char*>{"m", "n", "k", "dtype"})
      if (!col.count(c)) missing.push_back(c);
  }
  if (!col.count("time_us") && !col.count("tflops")) missing.push_back("time_us or tflops");
  if (!missing.empty()) {
    std::string have;
    for (const auto& h : header) have += (have.empty() ? "" : ", ") + h;
    throw InputError(fmt::format(
        "{}: line {}: missing required column(s): {} (header: {}; needed: spec, or m, n, k and "
        "dtype (mla_decode: b, s, h and dtype); and time_us or tflops)",
        origin, lines[0].first, join(missing), have));
  }
  if (lines.size() == 1) throw InputError(fmt::format("{}: a header row but no data rows", origin));

  std::map<DType, std::size_t> dtype_rows;
  std::map<std::string, std::size_t> first_line;  // spec -> the line that gave it first
  std::vector<std::string> duplicates;
  for (std::size_t li = 1; li < lines.size(); ++li) {
    const auto& [line_no, line] = lines[li];
    try {
      const auto f = split_csv(line);
      if (f.size() != header.size())
        throw InputError(fmt::format("{} fields, the header has {}", f.size(), header.size()));
      auto get = [&](const char* c) -> std::string {
        auto it = col.find(c);
        return it == col.end() ? std::string() : f[it->second];
      };
      const Op op = by_spec && !get("spec").empty() ? op_of_spec(get("spec"), get("dtype"))
                                                    : op_of_columns(get);
      const Roofline roof =
          device_roofline(dev, op.dtype);  // throws when the device lacks the dtype

      Result r;
      r.op.op = op;
      r.op.prov.model = get("model"), r.op.prov.layer = get("layer"),
      r.op.prov.phase = get("phase");
      if (!get("tokens").empty()) r.op.prov.tokens = to_count(get("tokens"), "tokens");
      if (!get("context").empty()) r.op.prov.context = to_count(get("context"), "context");
      r.op.prov.count = get("count").empty() ? 1 : to_int(get("count"), "count");
      r.backend = opt.backend;
      r.flops = op.flops(), r.bytes = op.bytes();
      const std::string tus = get("time_us"), tfl = get("tflops");
      if (tus.empty() && tfl.empty()) throw InputError("neither time_us nor tflops is given");
      if (!tus.empty()) {
        r.median_s = to_positive(tus, "time_us") * 1e-6;
        if (!(r.median_s >= 1e-9 && r.median_s <= 86400))  // the results files' range
          throw InputError(fmt::format("time_us {} outside 0.001..8.64e10", tus.substr(0, 40)));
        if (!tfl.empty()) {
          const double given = to_positive(tfl, "tflops"), implied = r.flops / r.median_s / 1e12;
          if (std::abs(given / implied - 1) > 0.05)
            throw InputError(fmt::format("time_us {} implies {:.4g} TFLOP/s but tflops says {}",
                                         tus, implied, tfl));
        }
      } else {
        r.median_s = r.flops / (to_positive(tfl, "tflops") * 1e12);
        if (!(r.median_s >= 1e-9 && r.median_s <= 86400))
          throw InputError(
              fmt::format("tflops {} puts the op's time outside 1 ns..1 day", tfl.substr(0, 40)));
      }
      r.tflops = r.flops / r.median_s / 1e12;
      r.gbps = r.bytes / r.median_s / 1e9;
      r.attainable_tflops = roof.attainable_tflops(op);
      r.efficiency = r.tflops / r.attainable_tflops;
      r.verified = false;  // measured elsewhere: attain did not check the answer
      if (r.efficiency > 1.0)
        out.warnings.push_back(
            {line_no, fmt::format("{} runs at {:.0f}% of {}'s attainable (above the roofline: "
                                  "check the units; time_us is microseconds)",
                                  op.spec(), 100 * r.efficiency, dev.id)});
      if (const auto [it, fresh] = first_line.emplace(op.spec(), line_no); !fresh)
        duplicates.push_back(
            fmt::format("line {} repeats the op of line {} ({})", line_no, it->second, op.spec()));
      ++dtype_rows[op.dtype];
      out.file.results.push_back(std::move(r));
    } catch (const InputError& e) {
      out.skipped.push_back({line_no, e.what()});
    }
  }
  // Two timings of one op: which is the op's? Refused whole, nothing imported.
  if (!duplicates.empty())
    throw InputError(fmt::format(
        "{}: {} duplicate row(s): {}{}", origin, duplicates.size(), duplicates[0],
        duplicates.size() > 1 ? fmt::format(" (and {} more)", duplicates.size() - 1) : ""));
  if (out.file.results.empty()) {
    std::string why;
    for (std::size_t i = 0; i < out.skipped.size() && i < 10; ++i)
      why += fmt::format("\n  line {}: {}", out.skipped[i].line, out.skipped[i].message);
    if (out.skipped.size() > 10) why += fmt::format("\n  ... and {} more", out.skipped.size() - 10);
    throw InputError(fmt::format("{}: no row could be imported:{}", origin, why));
  }
  // The file's ceilings: the roofline of its most common dtype (others are drawn from the results).
  const DType main_dt =
      std::max_element(dtype_rows.begin(), dtype_rows.end(), [](auto& a, auto& b) {
        return a.second < b.second;
      })->first;
  out.file.machine.device = dev.id;
  out.file.machine.roofline = device_roofline(dev, main_dt);
  out.file.config = {
      {"imported_from", origin},
      {"device", dev.id},
      {"device_name", dev.name},
      {"backend", opt.backend},
      {"rows_imported", out.file.results.size()},
      {"rows_skipped", out.skipped.size()},
      {"timing",
       "as measured by the CSV's source; not verified by attain; min_s/iqr_s/reps unknown"},
      {"flops_model", "2*M*N*K per GEMM (grouped: summed)"},
      {"bytes_model", "inputs read once + outputs written once, stored dtypes"}};
  if (!dev.assumptions.empty()) out.file.config["assumed_peaks"] = dev.assumptions;
  return out;
}

}  // namespace attain
