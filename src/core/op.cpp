#include "attain/op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>

#include "core/util.hpp"

namespace attain {

std::string_view kind_name(OpKind k) {
  switch (k) {
    case OpKind::gemm:
      return "gemm";
    case OpKind::batched_gemm:
      return "batched_gemm";
    case OpKind::grouped_gemm:
      return "grouped_gemm";
    case OpKind::mla_decode:
      return "mla_decode";
  }
  return "?";
}

std::optional<OpKind> parse_kind(std::string_view name) {
  for (OpKind k : {OpKind::gemm, OpKind::batched_gemm, OpKind::grouped_gemm, OpKind::mla_decode})
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

namespace {

// (query, key) pairs of one request of `len` cached tokens and `q` queries: query i (0-based)
// sees len - q + i + 1 keys (causal), none below zero; q = 1 sees all len.
double mla_pairs(std::int64_t len, std::int64_t q) {
  const double n = static_cast<double>(std::min(len, q)), L = static_cast<double>(len);
  return n * L - n * (n - 1) / 2;
}

// Bytes of one cache row as stored.
double mla_row_bytes(DType dt) {
  return dt == DType::fp8 ? kMlaFp8RowBytes : kMlaDk * static_cast<double>(dtype_size(dt));
}

std::int64_t parse_int(std::string_view key, std::string_view v) {
  std::int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec == std::errc::result_out_of_range)
    throw InputError(fmt::format("{}={} is out of range", excerpt(key), excerpt(v)));
  if (ec != std::errc() || p != v.data() + v.size())
    throw InputError(fmt::format("{}={} is not an integer", excerpt(key), excerpt(v)));
  return x;
}

double parse_double(std::string_view key, std::string_view v) {
  double x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(x))
    throw InputError(fmt::format("{}={} is not a number", excerpt(key), excerpt(v)));
  return x;
}

void check_dim(std::string_view name, std::int64_t v) {
  if (v <= 0) throw InputError(fmt::format("{}={} must be positive", name, v));
  if (v >= kMaxDim) throw InputError(fmt::format("{}={} is too large (limit 2^31-1)", name, v));
}

// Product of dims, refusing anything past 2^50 elements (far beyond any machine).
std::int64_t checked_mul(std::initializer_list<std::int64_t> xs) {
  long double p = 1;
  for (auto x : xs) p *= static_cast<long double>(x);
  if (p > static_cast<long double>(std::int64_t{1} << 50))
    throw InputError("op is too large: a tensor would exceed 2^50 elements");
  std::int64_t r = 1;
  for (auto x : xs) r *= x;
  return r;
}

std::string fmt_double(double x) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, x);  // shortest round-trip form
  (void)ec;
  return std::string(buf, p);
}

}  // namespace

void Op::validate() const {
  if (!is_op_dtype(dtype))
    throw InputError(fmt::format("dtype {} is not an op dtype", dtype_name(dtype)));
  switch (kind) {
    case OpKind::gemm:
      check_dim("m", m), check_dim("n", n), check_dim("k", k);
      checked_mul({m, k}), checked_mul({n, k}), checked_mul({m, n});
      break;
    case OpKind::batched_gemm:
      check_dim("batch", batch), check_dim("m", m), check_dim("n", n), check_dim("k", k);
      checked_mul({batch, m, k}), checked_mul({batch, n, k}), checked_mul({batch, m, n});
      break;
    case OpKind::grouped_gemm:
      check_dim("groups", groups), check_dim("m", m), check_dim("n", n), check_dim("k", k);
      if (groups > kMaxGroups)
        throw InputError(fmt::format("groups={} is more than {} experts", groups, kMaxGroups));
      if (skew < 0 || skew > 8) throw InputError(fmt::format("skew={} must be in [0, 8]", skew));
      checked_mul({groups, m, k}), checked_mul({groups, n, k}), checked_mul({groups, m, n});
      if (skew > 0) checked_mul({groups, max_group_rows(), std::max(n, k)});
      break;
    case OpKind::mla_decode:
      check_dim("b", b), check_dim("s", s), check_dim("h", h), check_dim("s_q", s_q);
      if (dtype == DType::f16) throw InputError("mla_decode supports dtype bf16, fp8 or fp32");
      if (s_q > s) throw InputError(fmt::format("s_q={} must not exceed s={}", s_q, s));
      checked_mul({b, ceil_div(s, kMlaBlock) * kMlaBlock, kMlaDk}),
          checked_mul({b, s_q, h, kMlaDk});
      break;
  }
}

std::string Op::spec() const {
  const auto dt = dtype_name(dtype);
  switch (kind) {
    case OpKind::gemm:
      return fmt::format("gemm:m={},n={},k={},dtype={}", m, n, k, dt);
    case OpKind::batched_gemm:
      return fmt::format("batched_gemm:batch={},m={},n={},k={},dtype={}", batch, m, n, k, dt);
    case OpKind::grouped_gemm: {
      std::string s_ =
          fmt::format("grouped_gemm:groups={},m={},n={},k={},dtype={}", groups, m, n, k, dt);
      if (skew > 0) s_ += ",skew=" + fmt_double(skew);
      if (layout == GroupedLayout::masked) s_ += ",layout=masked";
      return s_;
    }
    case OpKind::mla_decode: {
      std::string s_ = fmt::format("mla_decode:b={},s={},h={},dtype={}", b, s, h, dt);
      if (s_q != 1) s_ += fmt::format(",s_q={}", s_q);
      return s_;
    }
  }
  return {};
}

std::string excerpt(std::string_view input) {
  constexpr std::size_t kMax = 80;
  if (input.size() <= kMax) return std::string(input);
  return std::string(input.substr(0, kMax)) + "...";
}

Op Op::parse(std::string_view spec) {
  const auto colon = spec.find(':');
  if (colon == std::string_view::npos)
    throw InputError(
        fmt::format("op spec '{}' has no ':' (expected e.g. gemm:m=8,n=4096,k=7168,dtype=bf16)",
                    excerpt(spec)));
  const auto kind_s = spec.substr(0, colon);
  Op op;
  if (const auto k = parse_kind(kind_s))
    op.kind = *k;
  else
    throw InputError(
        fmt::format("unknown op kind '{}' (known: gemm, batched_gemm, grouped_gemm, mla_decode)",
                    excerpt(kind_s)));

  std::map<std::string, std::string, std::less<>> kv;
  std::string_view rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto item = rest.substr(0, comma);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw InputError(
          fmt::format("op spec '{}': '{}' is not key=value", excerpt(spec), excerpt(item)));
    const std::string key(item.substr(0, eq));
    if (!kv.emplace(key, std::string(item.substr(eq + 1))).second)
      throw InputError(
          fmt::format("op spec '{}': key '{}' given twice", excerpt(spec), excerpt(key)));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  auto take = [&](std::string_view key, bool required) -> std::optional<std::string> {
    auto it = kv.find(key);
    if (it == kv.end()) {
      if (required) throw InputError(fmt::format("op spec '{}': missing '{}'", excerpt(spec), key));
      return std::nullopt;
    }
    std::string v = it->second;
    kv.erase(it);
    return v;
  };
  auto int_of = [&](std::string_view key) { return parse_int(key, *take(key, true)); };

  const auto dts = take("dtype", true);
  const auto dt = parse_dtype(*dts);
  if (!dt)
    throw InputError(
        fmt::format("unknown dtype '{}' (known: fp32, bf16, fp16, fp8)", excerpt(*dts)));
  op.dtype = *dt;
  switch (op.kind) {
    case OpKind::gemm:
      op.m = int_of("m"), op.n = int_of("n"), op.k = int_of("k");
      break;
    case OpKind::batched_gemm:
      op.batch = int_of("batch"), op.m = int_of("m"), op.n = int_of("n"), op.k = int_of("k");
      break;
    case OpKind::grouped_gemm:
      op.groups = int_of("groups"), op.m = int_of("m"), op.n = int_of("n"), op.k = int_of("k");
      if (auto v = take("skew", false)) op.skew = parse_double("skew", *v);
      if (auto v = take("layout", false)) {
        if (*v == "contiguous")
          op.layout = GroupedLayout::contiguous;
        else if (*v == "masked")
          op.layout = GroupedLayout::masked;
        else
          throw InputError(fmt::format("layout={} (known: contiguous, masked)", excerpt(*v)));
      }
      break;
    case OpKind::mla_decode:
      op.b = int_of("b"), op.s = int_of("s"), op.h = int_of("h");
      if (auto v = take("s_q", false)) op.s_q = parse_int("s_q", *v);
      break;
  }
  if (!kv.empty())
    throw InputError(fmt::format("op spec '{}': unknown key '{}' for {}", excerpt(spec),
                                 excerpt(kv.begin()->first), kind_s));
  op.validate();
  return op;
}

Op Op::gemm_shape(std::string_view mxnxk, DType dt) {
  std::int64_t d[3];
  std::string_view rest = mxnxk;
  for (int i = 0; i < 3; ++i) {
    const auto x = rest.find('x');
    if ((i < 2) == (x == std::string_view::npos))
      throw InputError(fmt::format("shape '{}' is not MxNxK", excerpt(mxnxk)));
    d[i] = parse_int(i == 0 ? "M" : i == 1 ? "N" : "K", rest.substr(0, x));
    if (i < 2) rest = rest.substr(x + 1);
  }
  Op op;
  op.kind = OpKind::gemm, op.dtype = dt, op.m = d[0], op.n = d[1], op.k = d[2];
  op.validate();
  return op;
}

DType Op::out_dtype() const {
  if (dtype == DType::f32) return DType::f32;
  if (dtype == DType::f16) return DType::f16;
  return DType::bf16;
}

std::vector<std::int64_t> Op::group_rows() const {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(groups), m);
  if (skew <= 0 || groups == 1) return rows;
  // Zipf-like weights over groups, normalized to the same total; largest remainders fill up.
  const std::int64_t total = groups * m;
  std::vector<double> w(rows.size());
  double sum = 0;
  for (std::size_t g = 0; g < w.size(); ++g)
    sum += (w[g] = std::pow(static_cast<double>(g + 1), -skew));
  std::int64_t assigned = 0;
  std::vector<std::pair<double, std::size_t>> rem(rows.size());
  for (std::size_t g = 0; g < w.size(); ++g) {
    const double exact = static_cast<double>(total) * w[g] / sum;
    rows[g] = static_cast<std::int64_t>(std::floor(exact));
    assigned += rows[g];
    rem[g] = {exact - static_cast<double>(rows[g]), g};
  }
  std::stable_sort(rem.begin(), rem.end(), [](auto& a, auto& b_) { return a.first > b_.first; });
  for (std::size_t i = 0; assigned < total; ++i, ++assigned) ++rows[rem[i % rem.size()].second];
  return rows;
}

std::int64_t Op::total_rows() const {
  if (kind != OpKind::grouped_gemm) return m;
  return groups * m;  // skew redistributes rows, the total is kept
}

std::int64_t Op::max_group_rows() const {
  if (skew <= 0) return m;
  const auto r = group_rows();
  return *std::max_element(r.begin(), r.end());
}

double Op::flops() const {
  const double M = static_cast<double>(m), N = static_cast<double>(n), K = static_cast<double>(k);
  switch (kind) {
    case OpKind::gemm:
      return 2 * M * N * K;
    case OpKind::batched_gemm:
      return 2 * static_cast<double>(batch) * M * N * K;
    case OpKind::grouped_gemm:
      return 2 * static_cast<double>(total_rows()) * N * K;
    case OpKind::mla_decode:
      return 2.0 * static_cast<double>(b) * static_cast<double>(h) * mla_pairs(s, s_q) *
             (kMlaDk + kMlaDv);
  }
  return 0;
}

double Op::flops(std::span<const std::int32_t> seqlens) const {
  if (kind != OpKind::mla_decode || seqlens.empty()) return flops();
  double pairs = 0;
  for (const auto len : seqlens) pairs += mla_pairs(len, s_q);
  return 2.0 * static_cast<double>(h) * pairs * (kMlaDk + kMlaDv);
}

double Op::bytes() const {
  double total = 0;
  for (const auto& t : op_tensors(*this)) {
    if (t.name == "block_table" || t.name == "seqlens") continue;  // negligible metadata
    total += static_cast<double>(t.nbytes());
  }
  if (kind == OpKind::mla_decode) {
    // The cache is allocated in whole 64-token blocks, but only s rows of each are read.
    const double row = mla_row_bytes(dtype);
    const double alloc = static_cast<double>(b * ceil_div(s, kMlaBlock) * kMlaBlock);
    total -= (alloc - static_cast<double>(b * s)) * row;
  }
  if (kind == OpKind::grouped_gemm && layout == GroupedLayout::masked && skew > 0) {
    // Padded rows of the masked layout are neither read nor written.
    const double pad = static_cast<double>(groups * max_group_rows() - total_rows());
    const double in_row = static_cast<double>(k * dtype_size(dtype));
    const double out_row = static_cast<double>(n * dtype_size(out_dtype()));
    const double scale_row =
        dtype == DType::fp8 ? static_cast<double>(ceil_div(k, kFp8Block) * 4) : 0.0;
    total -= pad * (in_row + out_row + scale_row);
  }
  return total;
}

double Op::bytes(std::span<const std::int32_t> seqlens) const {
  if (kind != OpKind::mla_decode || seqlens.empty()) return bytes();
  // bytes() reads b * s cache rows; a ragged batch reads its seqlens' rows instead.
  double rows = 0;
  for (const auto len : seqlens) rows += static_cast<double>(len);
  return bytes() + (rows - static_cast<double>(b * s)) * mla_row_bytes(dtype);
}

std::int64_t TensorDesc::numel() const {
  std::int64_t p = 1;
  for (auto d : shape) p *= d;
  return p;
}
std::size_t TensorDesc::nbytes() const {
  return static_cast<std::size_t>(numel()) * dtype_size(dtype);
}

std::vector<TensorDesc> op_tensors(const Op& op) {
  std::vector<TensorDesc> t;
  const DType dt = op.dtype, od = op.out_dtype();
  const bool fp8 = dt == DType::fp8;
  const std::int64_t kb = ceil_div(op.k, kFp8Block), nb = ceil_div(op.n, kFp8Block);
  switch (op.kind) {
    case OpKind::gemm:
      t.push_back({"a", dt, {op.m, op.k}});
      t.push_back({"w", dt, {op.n, op.k}});
      if (fp8) {
        t.push_back({"a_scale", DType::f32, {op.m, kb}});
        t.push_back({"w_scale", DType::f32, {nb, kb}});
      }
      t.push_back({"c", od, {op.m, op.n}, true});
      break;
    case OpKind::batched_gemm:
      t.push_back({"a", dt, {op.batch, op.m, op.k}});
      t.push_back({"w", dt, {op.batch, op.n, op.k}});
      if (fp8) {
        t.push_back({"a_scale", DType::f32, {op.batch, op.m, kb}});
        t.push_back({"w_scale", DType::f32, {op.batch, nb, kb}});
      }
      t.push_back({"c", od, {op.batch, op.m, op.n}, true});
      break;
    case OpKind::grouped_gemm:
      if (op.layout == GroupedLayout::contiguous) {
        const std::int64_t rows = op.total_rows();
        t.push_back({"a", dt, {rows, op.k}});
        t.push_back({"w", dt, {op.groups, op.n, op.k}});
        t.push_back({"offsets", DType::i32, {op.groups + 1}});
        if (fp8) {
          t.push_back({"a_scale", DType::f32, {rows, kb}});
          t.push_back({"w_scale", DType::f32, {op.groups, nb, kb}});
        }
        t.push_back({"c", od, {rows, op.n}, true});
      } else {
        const std::int64_t mm = op.max_group_rows();
        t.push_back({"a", dt, {op.groups, mm, op.k}});
        t.push_back({"w", dt, {op.groups, op.n, op.k}});
        t.push_back({"counts", DType::i32, {op.groups}});
        if (fp8) {
          t.push_back({"a_scale", DType::f32, {op.groups, mm, kb}});
          t.push_back({"w_scale", DType::f32, {op.groups, nb, kb}});
        }
        t.push_back({"c", od, {op.groups, mm, op.n}, true});
      }
      break;
    case OpKind::mla_decode: {
      const std::int64_t max_blocks = ceil_div(op.s, kMlaBlock);
      const DType qd = dt == DType::f32 ? DType::f32 : DType::bf16;
      t.push_back({"q", qd, {op.b, op.s_q, op.h, kMlaDk}});
      if (fp8)
        t.push_back({"kcache", DType::u8, {op.b * max_blocks, kMlaBlock, kMlaFp8RowBytes}});
      else
        t.push_back({"kcache", dt, {op.b * max_blocks, kMlaBlock, kMlaDk}});
      t.push_back({"block_table", DType::i32, {op.b, max_blocks}});
      t.push_back({"seqlens", DType::i32, {op.b}});
      t.push_back({"o", od, {op.b, op.s_q, op.h, kMlaDv}, true});
      t.push_back({"lse", DType::f32, {op.b, op.h, op.s_q}, true});
      break;
    }
  }
  return t;
}

}  // namespace attain
