// The MLA decode driver: checks, split-KV schedule, per-split loop over cache blocks (each
// block dequantized once and used by every query row for both QK^T and PV), combine.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "attain/mla.hpp"
#include "attain/threadpool.hpp"
#include "kernels/cpu/attention/mla_common.hpp"

namespace attain {

using mla::kBlock;
using mla::kDk;
using mla::kDv;

namespace mla {

FloatBuf alloc_floats(std::size_t n) {
  const std::size_t bytes = std::max<std::size_t>(64, (n * sizeof(float) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return FloatBuf(static_cast<float*>(p));
}

void load_rows(const Ukernels& uk, DType dt, const std::byte* src, int rows, float* dst) {
  if (dt != DType::fp8) {
    const std::size_t rb = row_bytes(dt);
    for (int r = 0; r < rows; ++r) uk.convert(dt, src + r * rb, kDk, 1.0f, dst + r * kDk);
    return;
  }
  for (int r = 0; r < rows; ++r) {
    const std::byte* row = src + r * 656;
    float scales[4];
    std::memcpy(scales, row + kDv, sizeof scales);
    float* out = dst + r * kDk;
    for (int g = 0; g < 4; ++g)
      uk.convert(DType::fp8, row + g * kFp8Block, kFp8Block, scales[g], out + g * kFp8Block);
    uk.convert(DType::bf16, row + kDv + sizeof scales, kRope, 1.0f, out + kDv);
  }
}

void store_out(DType out, const float* src, std::int64_t n, void* dst, std::int64_t offset) {
  if (out == DType::f32) {
    std::memcpy(static_cast<float*>(dst) + offset, src,
                sizeof(float) * static_cast<std::size_t>(n));
    return;
  }
  auto* o = static_cast<std::uint16_t*>(dst) + offset;
  for (std::int64_t i = 0; i < n; ++i) o[i] = f32_to_bf16(src[i]);
}

}  // namespace mla

// ---- schedule -----------------------------------------------------------------------------

namespace {
// A request's cost in the schedule: its blocks and a split's overhead.
std::int64_t mla_cost(const std::int32_t* seqlens, std::int64_t b) {
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < b; ++i)
    total += ceil_div(std::max(0, seqlens[i]), kBlock) + kMlaSplitOverheadBlocks;
  return total;
}
}  // namespace

MlaSchedule mla_schedule(const std::int32_t* seqlens, std::int64_t b, int threads) {
  const int T = std::max(1, threads);
  constexpr std::int64_t ov = kMlaSplitOverheadBlocks;
  const std::int64_t total = mla_cost(seqlens, b);
  auto cost = [&](std::int64_t i) { return ceil_div(std::max(0, seqlens[i]), kBlock) + ov; };
  std::int64_t largest = 0;
  for (std::int64_t i = 0; i < b; ++i) largest = std::max(largest, cost(i));
  if (T > 1 && b >= std::int64_t{kMlaRequestsPerThread} * T && 4 * largest * T <= total) {
    MlaSchedule s;  // each request a list, longest first
    std::vector<std::int32_t> order(static_cast<std::size_t>(b));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int32_t x, std::int32_t y) { return cost(x) > cost(y); });
    for (const std::int32_t i : order)
      s.per_slot.push_back({{i, 0, static_cast<std::int32_t>(cost(i) - ov), -1}});
    s.split_begin.assign(static_cast<std::size_t>(b), -1);
    s.num_splits.assign(static_cast<std::size_t>(b), 1);
    s.payload = largest;
    return s;
  }
  MlaSchedule s;
  s.per_slot.resize(static_cast<std::size_t>(T));
  s.split_begin.assign(static_cast<std::size_t>(b), -1);
  s.num_splits.assign(static_cast<std::size_t>(b), 0);
  // Each thread but the last fills to within ov of the payload and carries at most one extra
  // overhead (the tail of a request cut at its start), so ceil(total/T) + 2 ov leaves the
  // last thread no more than the others.
  s.payload = ceil_div(total, T) + 2 * ov;
  int tid = 0;
  std::int64_t cap = s.payload;
  std::vector<MlaSplit> pieces;
  for (std::int64_t i = 0; i < b; ++i) {
    const std::int64_t nblk = ceil_div(std::max(0, seqlens[i]), kBlock);
    std::int64_t begin = 0;
    pieces.clear();
    for (;;) {
      const std::int64_t left = nblk - begin;
      // The last thread takes whatever remains; otherwise a thread takes what fits, and a
      // request is cut only when the piece it would get is worth its overhead.
      if (tid == T - 1 || left + ov <= cap) {
        pieces.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(begin),
                          static_cast<std::int32_t>(nblk), static_cast<std::int32_t>(tid)});
        cap -= left + ov;
        if (cap <= 0 && tid < T - 1) ++tid, cap = s.payload;
        break;
      }
      const std::int64_t take = cap - ov;
      if (take >= 1) {
        pieces.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(begin),
                          static_cast<std::int32_t>(begin + take), static_cast<std::int32_t>(tid)});
        begin += take;
      }
      ++tid, cap = s.payload;
    }
    // `partial` temporarily held the thread; now it becomes the partial slot.
    s.num_splits[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(pieces.size());
    const bool split = pieces.size() > 1;
    if (split) s.split_begin[static_cast<std::size_t>(i)] = s.num_partials;
    for (auto& p : pieces) {
      const int owner = p.partial;
      p.partial = split ? s.num_partials++ : -1;
      s.per_slot[static_cast<std::size_t>(owner)].push_back(p);
    }
  }
  return s;
}

// ---- checks ---------------------------------------------------------------------------------

void mla_check(const MlaParams& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::fp8 && p.dtype != DType::f32)
    throw InputError(fmt::format("mla_decode: cache dtype {} not supported (bf16, fp8, fp32)",
                                 dtype_name(p.dtype)));
  if (p.b < 0 || p.h < 1 || p.s_q < 1 || p.max_blocks < 0 || p.num_blocks < 0)
    throw InputError(
        fmt::format("mla_decode: bad dims b={} h={} s_q={} max_blocks={} num_blocks={}", p.b, p.h,
                    p.s_q, p.max_blocks, p.num_blocks));
  if (p.b == 0) return;
  if (!p.q || !p.kcache || !p.block_table || !p.seqlens || !p.o || !p.lse)
    throw InputError("mla_decode: a tensor pointer is null");
  for (std::int64_t i = 0; i < p.b; ++i) {
    const std::int64_t sl = p.seqlens[i];
    if (sl < 0 || sl > p.max_blocks * kBlock)
      throw InputError(fmt::format("mla_decode: seqlens[{}] = {} outside [0, {}]", i, sl,
                                   p.max_blocks * kBlock));
    for (std::int64_t j = 0; j < ceil_div(sl, kBlock); ++j) {
      const std::int64_t blk = p.block_table[i * p.max_blocks + j];
      if (blk < 0 || blk >= p.num_blocks)
        throw InputError(fmt::format("mla_decode: block_table[{}, {}] = {} outside [0, {})", i, j,
                                     blk, p.num_blocks));
    }
  }
}

// ---- the decoder ------------------------------------------------------------------------------

namespace {

struct Scratch {
  mla::FloatBuf kf, qt, st, o, mx, l, alpha;
  // bf16 products: probability pairs [32][mpad], an fp8 block as bf16 [64][576] (kf holds the
  // value pairs)
  mla::FloatBuf p2, kb16;
  std::vector<std::int32_t> vis;
};

}  // namespace

struct MlaDecoder::Impl {
  const mla::Ukernels& uk;
  std::int64_t max_rows, mpad_max;
  int threads;
  std::vector<Scratch> scratch;
  mla::FloatBuf part_o, part_lse;  // [max_partials][max_rows][512], [max_partials][max_rows]

  Impl(std::int64_t rows, int nthreads, std::string_view isa)
      : uk(pick(isa)),
        max_rows(rows),
        mpad_max(ceil_div(rows, mla::kMaxMpadAlign) * mla::kMaxMpadAlign),
        threads(std::max(1, nthreads)) {
    const auto mp = static_cast<std::size_t>(mpad_max);
    scratch.resize(static_cast<std::size_t>(threads));
    for (auto& s : scratch) {
      s.kf = mla::alloc_floats(static_cast<std::size_t>(kBlock) * kDk);
      s.qt = mla::alloc_floats(kDk * mp);
      s.st = mla::alloc_floats(kBlock * mp);
      s.o = mla::alloc_floats(mp * kDv);
      s.mx = mla::alloc_floats(mp);
      s.l = mla::alloc_floats(mp);
      s.alpha = mla::alloc_floats(mp);
      if (uk.pv16 != nullptr) {
        s.p2 = mla::alloc_floats(kBlock / 2 * mp);
        s.kb16 = mla::alloc_floats(kBlock * kDk / 2);
      }
      s.vis.assign(mp, 0);
    }
    const auto parts = static_cast<std::size_t>(mla_max_partials(threads));
    part_o = mla::alloc_floats(parts * mp * kDv);
    part_lse = mla::alloc_floats(parts * mp);
  }

  static const mla::Ukernels& pick(std::string_view isa) {
    if (isa == "auto") return mla::best_ukernels();
    if (isa == "scalar") return mla::scalar_ukernels();
    if (isa == "avx2" || isa == "avx512" || isa == "avx512_bf16") {
      const mla::Ukernels* a = isa == "avx2"     ? mla::avx2_ukernels()
                               : isa == "avx512" ? mla::avx512_ukernels()
                                                 : mla::avx512bf16_ukernels();
      if (a == nullptr)
        throw InputError(fmt::format("mla_decode: this CPU (or build) cannot run {}", isa));
      return *a;
    }
    throw InputError(
        fmt::format("mla_decode: unknown isa '{}' (auto, avx512_bf16, avx512, avx2, scalar)", isa));
  }
  void split(const MlaParams& p, const MlaSplit& u, Scratch& sc) const;
  void combine(const MlaParams& p, const MlaSchedule& s, int tid) const;
};

void MlaDecoder::Impl::split(const MlaParams& p, const MlaSplit& u, Scratch& sc) const {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::int64_t bi = u.request, M = p.s_q * p.h,
                     mpad = ceil_div(M, uk.mpad_align) * uk.mpad_align;
  const int mp = static_cast<int>(mpad);
  const std::int64_t seqlen = p.seqlens[bi];
  const DType qdt = p.dtype == DType::f32 ? DType::f32 : DType::bf16;
  const std::size_t qes = dtype_size(qdt), rb = mla::row_bytes(p.dtype);
  const auto* qbase =
      static_cast<const std::byte*>(p.q) + static_cast<std::size_t>(bi * M * kDk) * qes;
  // A bf16 cache on a table with bf16 products: the cache rows and the queries are multiplied
  // as stored (no conversion, no pre-scaling: the scale is applied to the scores). An fp8
  // block is dequantized (values times their scales) and rounded to bf16 first, as FlashMLA's
  // fp8 kernel does before its bf16 tensor-core products.
  const bool b16 = uk.qk16 != nullptr && p.dtype != DType::f32;
  // q2[k2][m] = the pair (q[m][2 k2], q[m][2 k2 + 1]) as one word (in qt's storage).
  auto* q2 = reinterpret_cast<std::uint32_t*>(sc.qt.get());
  if (b16) {
    for (std::int64_t m = 0; m < mpad; ++m) {
      std::uint32_t* dst = q2 + m;
      if (m >= M) {
        for (int k2 = 0; k2 < kDk / 2; ++k2) dst[k2 * mpad] = 0;
        continue;
      }
      const std::byte* src = qbase + static_cast<std::size_t>(m * kDk) * qes;
      for (int k2 = 0; k2 < kDk / 2; ++k2) std::memcpy(dst + k2 * mpad, src + 4 * k2, 4);
    }
  }
  // qt[k][m] = scale * q[m][k]; columns past M are 0 and masked (vis = 0). Transposed 16 rows
  // at a time through kf (free until the first block), so qt is written in contiguous runs.
  float* rows = sc.kf.get();
  for (std::int64_t m0 = 0; m0 < (b16 ? 0 : mpad); m0 += 16) {
    const std::int64_t n = std::min<std::int64_t>(16, mpad - m0);
    for (std::int64_t r = 0; r < n; ++r) {
      if (m0 + r < M)
        uk.convert(qdt, qbase + static_cast<std::size_t>((m0 + r) * kDk) * qes, kDk, 1.0f,
                   rows + r * kDk);
      else
        std::fill_n(rows + r * kDk, kDk, 0.0f);
    }
    for (int k = 0; k < kDk; ++k) {
      float* dst = sc.qt.get() + k * mpad + m0;
      for (std::int64_t r = 0; r < n; ++r) dst[r] = rows[r * kDk + k] * p.softmax_scale;
    }
  }
  std::fill_n(sc.o.get(), M * kDv, 0.0f);
  std::fill_n(sc.mx.get(), mpad, -kInf);
  std::fill_n(sc.l.get(), mpad, 0.0f);
  const auto* cache = static_cast<const std::byte*>(p.kcache);
  for (std::int64_t j = u.block_begin; j < u.block_end; ++j) {
    const std::int64_t t0 = j * kBlock;
    const int nt = static_cast<int>(std::min<std::int64_t>(kBlock, seqlen - t0));
    const std::byte* src =
        cache + static_cast<std::size_t>(p.block_table[bi * p.max_blocks + j]) * kBlock * rb;
    const float* kf = reinterpret_cast<const float*>(src);  // fp32 cache: used in place
    if (p.dtype != DType::f32 && !b16) {
      mla::load_rows(uk, p.dtype, src, nt, sc.kf.get());
      kf = sc.kf.get();
    }
    for (std::int64_t m = 0; m < mpad; ++m) {
      const std::int64_t qi = m / p.h;
      const std::int64_t v = m < M ? seqlen - p.s_q + qi + 1 - t0 : 0;
      sc.vis[static_cast<std::size_t>(m)] =
          static_cast<std::int32_t>(std::clamp<std::int64_t>(v, 0, nt));
    }
    const std::byte* next = nullptr;
    int next_lines = 0;
    if (j + 1 < u.block_end) {
      const std::int64_t nnt = std::min<std::int64_t>(kBlock, seqlen - t0 - kBlock);
      next =
          cache + static_cast<std::size_t>(p.block_table[bi * p.max_blocks + j + 1]) * kBlock * rb;
      next_lines = static_cast<int>(ceil_div(nnt * static_cast<std::int64_t>(rb), 64));
    }
    if (b16) {
      const auto* kb = reinterpret_cast<const std::uint16_t*>(src);
      if (p.dtype == DType::fp8) {
        auto* kb16 = reinterpret_cast<std::uint16_t*>(sc.kb16.get());
        uk.fp8_to_bf16(src, nt, kb16);
        kb = kb16;
      }
      auto* p2 = reinterpret_cast<std::uint32_t*>(sc.p2.get());
      auto* v2 = reinterpret_cast<std::uint32_t*>(sc.kf.get());
      uk.qk16(kb, nt, q2, mp, p.softmax_scale, sc.st.get(), next, next_lines);
      uk.softmax(sc.st.get(), nt, mp, sc.vis.data(), sc.mx.get(), sc.l.get(), sc.alpha.get());
      uk.pack16(sc.st.get(), nt, mp, kb, p2, v2);
      uk.pv16(p2, nt + nt % 2, mp, v2, static_cast<int>(M), sc.alpha.get(), sc.o.get());
      continue;
    }
    uk.qk(kf, nt, sc.qt.get(), mp, sc.st.get(), next, next_lines);
    uk.softmax(sc.st.get(), nt, mp, sc.vis.data(), sc.mx.get(), sc.l.get(), sc.alpha.get());
    uk.pv(sc.st.get(), nt, mp, kf, static_cast<int>(M), sc.alpha.get(), sc.o.get());
  }
  // Normalize; write the final output or this split's partial.
  float* o = u.partial < 0 ? sc.o.get()
                           : part_o.get() + static_cast<std::size_t>(u.partial * mpad_max * kDv);
  float* lse_part = part_lse.get() + static_cast<std::size_t>(std::max(0, u.partial) * mpad_max);
  for (std::int64_t m = 0; m < M; ++m) {
    const float l = sc.l[m];
    const float inv = l > 0 ? 1.0f / l : 0.0f;
    const float* src = sc.o.get() + m * kDv;
    float* dst = o + m * kDv;
    for (int d = 0; d < kDv; ++d) dst[d] = src[d] * inv;
    const float lse = l > 0 ? sc.mx[m] + std::log(l) : -kInf;
    if (u.partial < 0) {
      const std::int64_t qi = m / p.h, hi = m % p.h;
      p.lse[(bi * p.h + hi) * p.s_q + qi] = lse;
    } else {
      lse_part[m] = lse;
    }
  }
  if (u.partial < 0)
    mla::store_out(p.dtype == DType::f32 ? DType::f32 : DType::bf16, o, M * kDv, p.o, bi * M * kDv);
}

void MlaDecoder::Impl::combine(const MlaParams& p, const MlaSchedule& s, int tid) const {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::int64_t M = p.s_q * p.h;
  const int T = threads;
  const DType od = p.dtype == DType::f32 ? DType::f32 : DType::bf16;
  float acc[kDv];
  std::int64_t row = 0;  // rows of split requests, dealt round robin to threads
  for (std::int64_t bi = 0; bi < p.b; ++bi) {
    const int n = s.num_splits[static_cast<std::size_t>(bi)];
    if (n < 2) continue;
    const int first = s.split_begin[static_cast<std::size_t>(bi)];
    for (std::int64_t m = 0; m < M; ++m, ++row) {
      if (row % T != tid) continue;
      float lmax = -kInf;
      for (int k = 0; k < n; ++k) lmax = std::max(lmax, part_lse[(first + k) * mpad_max + m]);
      std::fill_n(acc, kDv, 0.0f);
      float lse = -kInf;
      if (lmax != -kInf) {
        float sum = 0;
        for (int k = 0; k < n; ++k) sum += std::exp(part_lse[(first + k) * mpad_max + m] - lmax);
        lse = lmax + std::log(sum);
        for (int k = 0; k < n; ++k) {
          const float w = std::exp(part_lse[(first + k) * mpad_max + m] - lse);
          const float* src = part_o.get() + ((first + k) * mpad_max + m) * kDv;
          for (int d = 0; d < kDv; ++d) acc[d] += w * src[d];
        }
      }
      const std::int64_t qi = m / p.h, hi = m % p.h;
      p.lse[(bi * p.h + hi) * p.s_q + qi] = lse;
      mla::store_out(od, acc, kDv, p.o, (bi * M + m) * kDv);
    }
  }
}

MlaDecoder::MlaDecoder(std::int64_t max_rows, int threads, std::string_view isa)
    : impl_(std::make_unique<Impl>(std::max<std::int64_t>(1, max_rows), threads, isa)) {}
MlaDecoder::~MlaDecoder() = default;
int MlaDecoder::threads() const {
  return impl_->threads;
}
std::string MlaDecoder::isa() const {
  return impl_->uk.isa;
}

void MlaDecoder::run(const MlaParams& p) {
  mla_check(p);
  if (p.s_q * p.h > impl_->max_rows)
    throw InputError(fmt::format("mla_decode: s_q*h = {} rows exceed the decoder's {}", p.s_q * p.h,
                                 impl_->max_rows));
  if (p.b == 0) return;
  const int T = impl_->threads;
  const MlaSchedule s = mla_schedule(p.seqlens, p.b, T);
  ThreadPool::instance().run_tasks(
      T, static_cast<std::int64_t>(s.per_slot.size()), [&](std::int64_t slot, int tid) {
        for (const MlaSplit& u : s.per_slot[static_cast<std::size_t>(slot)])
          impl_->split(p, u, impl_->scratch[static_cast<std::size_t>(tid)]);
      });
  if (s.num_partials > 0)
    ThreadPool::instance().run(T, [&](int tid, int) { impl_->combine(p, s, tid); });
}

void mla_decode(const MlaParams& p, int threads) {
  MlaDecoder dec(p.s_q * p.h, threads);
  dec.run(p);
}

MlaParams mla_params(TensorSet& set) {
  const Op& op = set.op();
  if (op.kind != OpKind::mla_decode)
    throw InputError("mla_params: not an mla_decode op: " + op.spec());
  MlaParams p;
  p.dtype = op.dtype;
  p.q = set["q"].data;
  p.kcache = set["kcache"].data;
  p.block_table = set["block_table"].as<std::int32_t>();
  p.seqlens = set["seqlens"].as<std::int32_t>();
  p.o = set["o"].data;
  p.lse = set["lse"].as<float>();
  p.b = op.b, p.s_q = op.s_q, p.h = op.h;
  p.max_blocks = set["block_table"].desc.shape[1];
  p.num_blocks = set["kcache"].desc.shape[0];
  return p;
}

namespace {

class MlaKernel final : public Kernel {
 public:
  MlaKernel(TensorSet& set, const RunOptions& opt)
      : params_(mla_params(set)), dec_(params_.s_q * params_.h, opt.threads) {}
  void run() override { dec_.run(params_); }

 private:
  MlaParams params_;
  MlaDecoder dec_;
};

}  // namespace

std::unique_ptr<Kernel> make_mla_kernel(TensorSet& set, const RunOptions& opt) {
  return std::make_unique<MlaKernel>(set, opt);
}

}  // namespace attain
