// The baselines the MLA kernel is measured against (same micro-kernel tables, same threads):
//  - naive absorbed attention: per request, scores for every head and token materialized,
//    a softmax, then a second pass over the cache for P.V; one dot product / axpy per head
//    and token, so each cache row is re-read from L1/L2 once per head with no register reuse;
//  - separate_kv: MHA-style decode over per-head K[.,h,192] and V[.,h,128] caches.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "attain/mla.hpp"
#include "attain/threadpool.hpp"
#include "bench/rng.hpp"
#include "kernels/cpu/attention/mla_common.hpp"

namespace attain {

using mla::kBlock;
using mla::kDk;
using mla::kDv;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Visible keys of query qi in a request of `seqlen` keys and s_q queries (causal).
inline std::int64_t visible(std::int64_t seqlen, std::int64_t s_q, std::int64_t qi) {
  return std::clamp<std::int64_t>(seqlen - s_q + qi + 1, 0, seqlen);
}

// Runs fn(request, tid) for every request, requests handed out dynamically.
template <class F>
void for_requests(int threads, std::int64_t b, F&& fn) {
  std::atomic<std::int64_t> next{0};
  ThreadPool::instance().run(threads, [&](int tid, int) {
    for (std::int64_t i; (i = next.fetch_add(1)) < b;) fn(i, tid);
  });
}

// ---- naive absorbed ------------------------------------------------------------------------

class NaiveKernel final : public Kernel {
 public:
  NaiveKernel(TensorSet& set, const RunOptions& opt)
      : p_(mla_params(set)), threads_(std::max(1, opt.threads)) {
    const std::int64_t M = p_.s_q * p_.h;
    for (int t = 0; t < threads_; ++t) {
      Scratch s;
      s.q = mla::alloc_floats(static_cast<std::size_t>(M * kDk));
      s.scores = mla::alloc_floats(static_cast<std::size_t>(M * p_.max_blocks * kBlock));
      s.row = mla::alloc_floats(kDk);
      s.o = mla::alloc_floats(static_cast<std::size_t>(M * kDv));
      scratch_.push_back(std::move(s));
    }
  }
  void run() override {
    mla_check(p_);
    for_requests(threads_, p_.b, [&](std::int64_t bi, int tid) {
      request(bi, scratch_[static_cast<std::size_t>(tid)]);
    });
  }

 private:
  struct Scratch {
    mla::FloatBuf q, scores, row, o;
  };

  const std::byte* row_ptr(std::int64_t bi, std::int64_t t) const {
    const std::int64_t blk = p_.block_table[bi * p_.max_blocks + t / kBlock];
    return static_cast<const std::byte*>(p_.kcache) +
           static_cast<std::size_t>(blk * kBlock + t % kBlock) * mla::row_bytes(p_.dtype);
  }

  void request(std::int64_t bi, Scratch& sc) const {
    const std::int64_t M = p_.s_q * p_.h, seqlen = p_.seqlens[bi], ld = p_.max_blocks * kBlock;
    const DType qdt = p_.dtype == DType::f32 ? DType::f32 : DType::bf16;
    const auto* qb = static_cast<const std::byte*>(p_.q) +
                     static_cast<std::size_t>(bi * M * kDk) * dtype_size(qdt);
    for (std::int64_t m = 0; m < M; ++m) {
      float* qm = sc.q.get() + m * kDk;
      uk_.convert(qdt, qb + static_cast<std::size_t>(m * kDk) * dtype_size(qdt), kDk, 1.0f, qm);
      for (int k = 0; k < kDk; ++k) qm[k] *= p_.softmax_scale;
    }
    // Pass 1: every score of the sequence, materialized [M][seqlen].
    for (std::int64_t t = 0; t < seqlen; ++t) {
      mla::load_rows(uk_, p_.dtype, row_ptr(bi, t), 1, sc.row.get());
      for (std::int64_t m = 0; m < M; ++m)
        sc.scores[m * ld + t] = uk_.dot(sc.q.get() + m * kDk, sc.row.get(), kDk);
    }
    // Softmax per row over its visible keys.
    std::vector<float> lse(static_cast<std::size_t>(M));
    for (std::int64_t m = 0; m < M; ++m) {
      const std::int64_t vis = visible(seqlen, p_.s_q, m / p_.h);
      float* s = sc.scores.get() + m * ld;
      if (vis == 0) {
        lse[static_cast<std::size_t>(m)] = -kInf;
        continue;
      }
      const float mx = *std::max_element(s, s + vis);
      const float sum = uk_.exp_sum(s, static_cast<int>(vis), mx);
      const float inv = 1.0f / sum;
      for (std::int64_t t = 0; t < vis; ++t) s[t] *= inv;
      lse[static_cast<std::size_t>(m)] = mx + std::log(sum);
    }
    // Pass 2: the cache again, o[m] += p[m][t] * V[t].
    std::fill_n(sc.o.get(), M * kDv, 0.0f);
    for (std::int64_t t = 0; t < seqlen; ++t) {
      mla::load_rows(uk_, p_.dtype, row_ptr(bi, t), 1, sc.row.get());
      for (std::int64_t m = 0; m < M; ++m)
        if (t < visible(seqlen, p_.s_q, m / p_.h))
          uk_.axpy(sc.scores[m * ld + t], sc.row.get(), sc.o.get() + m * kDv, kDv);
    }
    mla::store_out(qdt, sc.o.get(), M * kDv, p_.o, bi * M * kDv);
    for (std::int64_t m = 0; m < M; ++m)
      p_.lse[(bi * p_.h + m % p_.h) * p_.s_q + m / p_.h] = lse[static_cast<std::size_t>(m)];
  }

  MlaParams p_;
  const mla::Ukernels& uk_ = mla::best_ukernels();
  int threads_;
  std::vector<Scratch> scratch_;
};

}  // namespace

std::unique_ptr<Kernel> make_mla_naive_kernel(TensorSet& set, const RunOptions& opt) {
  return std::make_unique<NaiveKernel>(set, opt);
}

// ---- separate K / V (MHA-style) ----------------------------------------------------------

namespace {
constexpr int kDqk = 192, kDvh = 128;  // qk_nope + qk_rope, v_head (DeepSeek-V3)
}

struct SeparateKvCase::Data {
  Op op;
  DType cache_dt, q_dt, out_dt;
  std::int64_t max_blocks = 0, pool = 0;
  bool aliased = false;
  float k_scale = 1, v_scale = 1;                                  // fp8 only: one scale per tensor
  std::vector<std::uint16_t> q16;                                  // [b, s_q, h, 192] bf16, or
  std::vector<float> q32;                                          //                   fp32
  mla::FloatBuf k_f32, v_f32;                                      // fp32 caches
  std::unique_ptr<std::uint8_t[], mla::FreeDeleter> k_raw, v_raw;  // bf16 / fp8 caches
  std::vector<std::int32_t> table, seqlens;
  std::vector<float> o, lse;  // o stored as fp32 values rounded to the output dtype

  std::size_t es() const { return dtype_size(cache_dt == DType::fp8 ? DType::u8 : cache_dt); }
  const std::byte* k_base() const {
    return cache_dt == DType::f32 ? reinterpret_cast<const std::byte*>(k_f32.get())
                                  : reinterpret_cast<const std::byte*>(k_raw.get());
  }
  const std::byte* v_base() const {
    return cache_dt == DType::f32 ? reinterpret_cast<const std::byte*>(v_f32.get())
                                  : reinterpret_cast<const std::byte*>(v_raw.get());
  }
  // K row of (pool block, slot, head) and V row likewise.
  const std::byte* krow(std::int64_t blk, std::int64_t slot, std::int64_t hi) const {
    return k_base() + static_cast<std::size_t>(((blk * kBlock + slot) * op.h + hi) * kDqk) * es();
  }
  const std::byte* vrow(std::int64_t blk, std::int64_t slot, std::int64_t hi) const {
    return v_base() + static_cast<std::size_t>(((blk * kBlock + slot) * op.h + hi) * kDvh) * es();
  }
  float kscale() const { return cache_dt == DType::fp8 ? k_scale : 1.0f; }
  float vscale() const { return cache_dt == DType::fp8 ? v_scale : 1.0f; }
  float qval(std::size_t i) const { return q_dt == DType::f32 ? q32[i] : bf16_to_f32(q16[i]); }
};

namespace {

// Fills n elements of dtype dt with values uniform in about [-1, 1) (fp8: / scale), fast:
// a 4096-entry table of converted values indexed by random bits.
void fill_fast(DType dt, void* dst, std::size_t n, float scale, Rng& rng) {
  std::vector<std::uint32_t> tab(4096);
  for (auto& v : tab) {
    const float x = rng.uniform();
    switch (dt) {
      case DType::f32:
        std::memcpy(&v, &x, 4);
        break;
      case DType::bf16:
        v = f32_to_bf16(x);
        break;
      default:
        v = f32_to_e4m3(x / scale);
        break;
    }
  }
  std::uint64_t bits = 0;
  int left = 0;
  auto pick = [&] {
    if (left == 0) bits = rng.next(), left = 5;
    const std::uint32_t r = tab[bits & 4095];
    bits >>= 12, --left;
    return r;
  };
  switch (dt) {
    case DType::f32: {
      auto* p = static_cast<std::uint32_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) p[i] = pick();
      break;
    }
    case DType::bf16: {
      auto* p = static_cast<std::uint16_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint16_t>(pick());
      break;
    }
    default: {
      auto* p = static_cast<std::uint8_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(pick());
      break;
    }
  }
}

class SeparateKvKernel final : public Kernel {
 public:
  SeparateKvKernel(SeparateKvCase::Data& d, const RunOptions& opt)
      : d_(d), threads_(std::max(1, opt.threads)) {
    const std::int64_t M = d.op.s_q * d.op.h;
    for (int t = 0; t < threads_; ++t) {
      Scratch s;
      s.q = mla::alloc_floats(static_cast<std::size_t>(M * kDqk));
      s.sc = mla::alloc_floats(static_cast<std::size_t>(M * kBlock));
      s.row = mla::alloc_floats(kDqk);
      s.o = mla::alloc_floats(static_cast<std::size_t>(M * kDvh));
      s.mx.resize(static_cast<std::size_t>(M));
      s.l.resize(static_cast<std::size_t>(M));
      scratch_.push_back(std::move(s));
    }
  }
  void run() override {
    for_requests(threads_, d_.op.b, [&](std::int64_t bi, int tid) {
      request(bi, scratch_[static_cast<std::size_t>(tid)]);
    });
  }

 private:
  struct Scratch {
    mla::FloatBuf q, sc, row, o;
    std::vector<float> mx, l;
  };

  void request(std::int64_t bi, Scratch& s) const {
    const Op& op = d_.op;
    const std::int64_t H = op.h, M = op.s_q * H, seqlen = d_.seqlens[static_cast<std::size_t>(bi)];
    const float scale = static_cast<float>(kMlaSoftmaxScale);
    for (std::int64_t m = 0; m < M; ++m)
      for (int k = 0; k < kDqk; ++k)
        s.q[m * kDqk + k] = d_.qval(static_cast<std::size_t>((bi * M + m) * kDqk + k)) * scale;
    std::fill_n(s.o.get(), M * kDvh, 0.0f);
    std::fill(s.mx.begin(), s.mx.end(), -kInf);
    std::fill(s.l.begin(), s.l.end(), 0.0f);
    const DType dt = d_.cache_dt == DType::fp8 ? DType::fp8 : d_.cache_dt;
    for (std::int64_t j = 0; j < ceil_div(seqlen, kBlock); ++j) {
      const std::int64_t blk = d_.table[static_cast<std::size_t>(bi * d_.max_blocks + j)];
      const std::int64_t t0 = j * kBlock, nt = std::min<std::int64_t>(kBlock, seqlen - t0);
      // Scores of this block: each K row (token, head) read once, used by the s_q queries.
      for (std::int64_t t = 0; t < nt; ++t)
        for (std::int64_t hi = 0; hi < H; ++hi) {
          uk_.convert(dt, d_.krow(blk, t, hi), kDqk, d_.kscale(), s.row.get());
          for (std::int64_t qi = 0; qi < op.s_q; ++qi) {
            const std::int64_t m = qi * H + hi;
            s.sc[m * kBlock + t] = uk_.dot(s.q.get() + m * kDqk, s.row.get(), kDqk);
          }
        }
      // Online softmax per (query, head), then P.V with each V row read once.
      for (std::int64_t m = 0; m < M; ++m) {
        const std::int64_t vis =
            std::clamp<std::int64_t>(visible(seqlen, op.s_q, m / H) - t0, 0, nt);
        float* sc = s.sc.get() + m * kBlock;
        if (vis == 0) {
          std::fill_n(sc, nt, 0.0f);
          continue;
        }
        const float mnew =
            std::max(s.mx[static_cast<std::size_t>(m)], *std::max_element(sc, sc + vis));
        const float alpha = std::exp(s.mx[static_cast<std::size_t>(m)] - mnew);
        const float sum = uk_.exp_sum(sc, static_cast<int>(vis), mnew);
        std::fill(sc + vis, sc + nt, 0.0f);
        s.l[static_cast<std::size_t>(m)] = s.l[static_cast<std::size_t>(m)] * alpha + sum;
        s.mx[static_cast<std::size_t>(m)] = mnew;
        float* o = s.o.get() + m * kDvh;
        for (int d = 0; d < kDvh; ++d) o[d] *= alpha;
      }
      for (std::int64_t t = 0; t < nt; ++t)
        for (std::int64_t hi = 0; hi < H; ++hi) {
          uk_.convert(dt, d_.vrow(blk, t, hi), kDvh, d_.vscale(), s.row.get());
          for (std::int64_t qi = 0; qi < op.s_q; ++qi) {
            const std::int64_t m = qi * H + hi;
            const float p = s.sc[m * kBlock + t];
            if (p != 0.0f) uk_.axpy(p, s.row.get(), s.o.get() + m * kDvh, kDvh);
          }
        }
    }
    for (std::int64_t m = 0; m < M; ++m) {
      const float l = s.l[static_cast<std::size_t>(m)];
      const float inv = l > 0 ? 1.0f / l : 0.0f;
      float* dst = d_.o.data() + (bi * M + m) * kDvh;
      for (int d = 0; d < kDvh; ++d) {
        const float v = s.o[m * kDvh + d] * inv;
        dst[d] = d_.out_dt == DType::f32 ? v : bf16_to_f32(f32_to_bf16(v));
      }
      d_.lse[static_cast<std::size_t>((bi * H + m % H) * op.s_q + m / H)] =
          l > 0 ? s.mx[static_cast<std::size_t>(m)] + std::log(l) : -kInf;
    }
  }

  SeparateKvCase::Data& d_;
  const mla::Ukernels& uk_ = mla::best_ukernels();
  int threads_;
  std::vector<Scratch> scratch_;
};

}  // namespace

SeparateKvCase::SeparateKvCase(const Op& op, std::uint64_t seed, std::size_t max_cache_bytes,
                               std::span<const std::int32_t> seqlens)
    : d_(std::make_unique<Data>()) {
  op.validate();
  if (op.kind != OpKind::mla_decode) throw InputError("separate_kv: not an mla_decode op");
  Data& d = *d_;
  d.op = op;
  d.cache_dt = op.dtype;
  d.q_dt = op.dtype == DType::f32 ? DType::f32 : DType::bf16;
  d.out_dt = op.out_dtype();
  d.max_blocks = ceil_div(op.s, kBlock);
  const std::size_t block_bytes = static_cast<std::size_t>(kBlock * op.h * (kDqk + kDvh)) * d.es();
  const std::int64_t needed = op.b * d.max_blocks;
  const auto fit = static_cast<std::int64_t>(max_cache_bytes / block_bytes);
  d.pool = std::min(needed, std::max(d.max_blocks, fit));
  d.aliased = d.pool < needed;
  Rng rng(seed);
  // Block table: request blocks over a shuffled pool (modulo the pool when aliased).
  std::vector<std::int32_t> perm(static_cast<std::size_t>(d.pool));
  std::iota(perm.begin(), perm.end(), 0);
  for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  d.table.resize(static_cast<std::size_t>(needed));
  for (std::int64_t i = 0; i < needed; ++i)
    d.table[static_cast<std::size_t>(i)] = perm[static_cast<std::size_t>(i % d.pool)];
  d.seqlens.assign(static_cast<std::size_t>(op.b), static_cast<std::int32_t>(op.s));
  if (!seqlens.empty()) {
    if (static_cast<std::int64_t>(seqlens.size()) != op.b)
      throw InputError(fmt::format("separate_kv: {} seqlens for b={}", seqlens.size(), op.b));
    for (std::size_t i = 0; i < seqlens.size(); ++i) {
      if (seqlens[i] < 0 || seqlens[i] > op.s)
        throw InputError(
            fmt::format("separate_kv: seqlens[{}] = {} outside [0, {}]", i, seqlens[i], op.s));
      d.seqlens[i] = seqlens[i];
    }
  }
  const std::size_t q_n = static_cast<std::size_t>(op.b * op.s_q * op.h * kDqk);
  if (d.q_dt == DType::f32) {
    d.q32.resize(q_n);
    fill_fast(DType::f32, d.q32.data(), q_n, 1, rng);
  } else {
    d.q16.resize(q_n);
    fill_fast(DType::bf16, d.q16.data(), q_n, 1, rng);
  }
  const auto k_n = static_cast<std::size_t>(d.pool * kBlock * op.h * kDqk);
  const auto v_n = static_cast<std::size_t>(d.pool * kBlock * op.h * kDvh);
  if (d.cache_dt == DType::fp8) d.k_scale = d.v_scale = 1.0f / kFp8Max;
  if (d.cache_dt == DType::f32) {
    d.k_f32 = mla::alloc_floats(k_n);
    d.v_f32 = mla::alloc_floats(v_n);
    fill_fast(DType::f32, d.k_f32.get(), k_n, 1, rng);
    fill_fast(DType::f32, d.v_f32.get(), v_n, 1, rng);
  } else {
    const std::size_t es = d.es();
    d.k_raw.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, (k_n * es + 63) / 64 * 64)));
    d.v_raw.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, (v_n * es + 63) / 64 * 64)));
    if (!d.k_raw || !d.v_raw) throw std::bad_alloc();
    fill_fast(d.cache_dt, d.k_raw.get(), k_n, d.k_scale, rng);
    fill_fast(d.cache_dt, d.v_raw.get(), v_n, d.v_scale, rng);
  }
  d.o.assign(static_cast<std::size_t>(op.b * op.s_q * op.h * kDvh),
             std::numeric_limits<float>::quiet_NaN());
  d.lse.assign(static_cast<std::size_t>(op.b * op.h * op.s_q),
               std::numeric_limits<float>::quiet_NaN());
}

SeparateKvCase::~SeparateKvCase() = default;

std::unique_ptr<Kernel> SeparateKvCase::make_kernel(const RunOptions& opt) {
  return std::make_unique<SeparateKvKernel>(*d_, opt);
}

Verification SeparateKvCase::verify(std::int64_t max_rows) const {
  const Data& d = *d_;
  const Op& op = d.op;
  Verification res;
  res.tolerance = tolerance(op);
  const std::int64_t total = op.b * op.s_q * op.h;
  Rng rng(17);
  const std::int64_t n = std::min(total, max_rows);
  double err2 = 0, ref2 = 0, lse_err = 0;
  std::vector<double> o(kDvh);
  std::vector<float> row(kDqk);
  const DType dt = d.cache_dt;
  const auto load = [&](const std::byte* p, int len, float sc) {
    for (int k = 0; k < len; ++k) {
      switch (dt) {
        case DType::f32:
          std::memcpy(&row[static_cast<std::size_t>(k)], p + 4 * k, 4);
          break;
        case DType::bf16: {
          std::uint16_t h;
          std::memcpy(&h, p + 2 * k, 2);
          row[static_cast<std::size_t>(k)] = bf16_to_f32(h);
          break;
        }
        default:
          row[static_cast<std::size_t>(k)] = e4m3_to_f32(static_cast<std::uint8_t>(p[k])) * sc;
          break;
      }
    }
  };
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r =
        n == total ? i : static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(total)));
    const std::int64_t bi = r / (op.s_q * op.h), qi = (r / op.h) % op.s_q, hi = r % op.h;
    const std::int64_t seqlen = d.seqlens[static_cast<std::size_t>(bi)],
                       vis = visible(seqlen, op.s_q, qi);
    const std::size_t qoff = static_cast<std::size_t>(r * kDqk);
    std::vector<double> sc(static_cast<std::size_t>(vis));
    double mx = -INFINITY;
    for (std::int64_t t = 0; t < vis; ++t) {
      const std::int64_t blk = d.table[static_cast<std::size_t>(bi * d.max_blocks + t / kBlock)];
      load(d.krow(blk, t % kBlock, hi), kDqk, d.kscale());
      double acc = 0;
      for (int k = 0; k < kDqk; ++k)
        acc += static_cast<double>(d.qval(qoff + static_cast<std::size_t>(k))) *
               row[static_cast<std::size_t>(k)];
      sc[static_cast<std::size_t>(t)] = acc * kMlaSoftmaxScale;
      mx = std::max(mx, sc[static_cast<std::size_t>(t)]);
    }
    std::fill(o.begin(), o.end(), 0.0);
    double sum = 0;
    for (std::int64_t t = 0; t < vis; ++t) {
      const std::int64_t blk = d.table[static_cast<std::size_t>(bi * d.max_blocks + t / kBlock)];
      load(d.vrow(blk, t % kBlock, hi), kDvh, d.vscale());
      const double p = std::exp(sc[static_cast<std::size_t>(t)] - mx);
      sum += p;
      for (int k = 0; k < kDvh; ++k)
        o[static_cast<std::size_t>(k)] += p * row[static_cast<std::size_t>(k)];
    }
    for (int k = 0; k < kDvh; ++k) {
      const double ref = vis > 0 ? o[static_cast<std::size_t>(k)] / sum : 0.0;
      const double got = d.o[static_cast<std::size_t>(r * kDvh + k)];
      if (!std::isfinite(got)) {
        res.detail = fmt::format("non-finite output o[{}, {}, {}, {}]", bi, qi, hi, k);
        return res;
      }
      err2 += (got - ref) * (got - ref), ref2 += ref * ref;
    }
    const double got_lse = d.lse[static_cast<std::size_t>((bi * op.h + hi) * op.s_q + qi)];
    if (vis == 0) {
      if (!(std::isinf(got_lse) && got_lse < 0)) {
        res.detail = "lse of an empty row is not -inf";
        return res;
      }
    } else {
      const double ref_lse = mx + std::log(sum);
      if (!std::isfinite(got_lse)) {
        res.detail = "non-finite lse";
        return res;
      }
      lse_err = std::max(lse_err, std::fabs(got_lse - ref_lse) / std::max(1.0, std::fabs(ref_lse)));
    }
  }
  res.error = std::max(ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2), lse_err);
  res.ok = res.error <= res.tolerance;
  if (!res.ok)
    res.detail =
        fmt::format("relative error {:.3g} above tolerance {:.3g}", res.error, res.tolerance);
  return res;
}

std::size_t SeparateKvCase::cache_bytes_read() const {
  const std::int64_t rows =
      std::accumulate(d_->seqlens.begin(), d_->seqlens.end(), std::int64_t{0});
  return static_cast<std::size_t>(rows * d_->op.h * (kDqk + kDvh)) * d_->es();
}
std::size_t SeparateKvCase::footprint_bytes() const {
  return static_cast<std::size_t>(d_->pool * kBlock * d_->op.h * (kDqk + kDvh)) * d_->es();
}
double SeparateKvCase::flops() const {
  const Op& op = d_->op;
  double pairs = 0;
  for (const std::int32_t s : d_->seqlens)
    for (std::int64_t qi = 0; qi < op.s_q; ++qi)
      pairs += static_cast<double>(visible(s, op.s_q, qi));
  return 2.0 * static_cast<double>(op.h) * pairs * (kDqk + kDvh);
}
bool SeparateKvCase::aliased() const {
  return d_->aliased;
}
std::int64_t SeparateKvCase::pool_blocks() const {
  return d_->pool;
}

}  // namespace attain
