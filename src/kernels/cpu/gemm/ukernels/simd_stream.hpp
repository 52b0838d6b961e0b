// Streaming kernels written once over a SIMD load-traits type S (Avx2Load, Avx512Load):
// dtype conversion of contiguous runs (used by packing) and the decode path (small M,
// W rows streamed once and converted in registers). Included only by ISA files, with S in an
// anonymous namespace, so every instantiation is local to its ISA's object file.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attain/dtype.hpp"
#include "attain/tile.hpp"
#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

// A software prefetch GCC cannot drop: with -O3 it deleted every __builtin_prefetch of the
// fp32 decode loop (found in the disassembly; the 16-bit loops kept theirs).
inline void prefetch_line(const void* p) {
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
}
// The same into L2 (prefetcht1).
inline void prefetch_line_l2(const void* p) {
  asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
}

namespace {
// The packing transposes' prefetch: the line 256 bytes on in each of `rows` rows. A panel's rows
// are as many streams (8 KiB apart for K = 2048) that the hardware prefetcher follows too late
// (cold 64 x 2048 A^T, 1 thread: 17 -> 21 GB/s with it). A hint only: the lines may lie past the
// end of the matrix.
inline void prefetch_rows(const float* src, std::int64_t ld, int rows) {
  for (int r = 0; r < rows; ++r)
    _mm_prefetch(reinterpret_cast<const char*>(src + r * ld + 64), _MM_HINT_T0);
}
}  // namespace

template <class S>
struct Stream {
  using V = typename S::V;
  static constexpr int L = S::kLanes;

  static float bf16_scalar(std::uint16_t h) {
    const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }

  // One element of a row in storage dtype T, as fp32 (fp8: times scale, rounded once).
  template <DType T>
  static float scalar(const std::byte* row, std::int64_t p, float scale, const float* e4m3) {
    if constexpr (T == DType::f32) {
      float f;
      std::memcpy(&f, row + p * 4, sizeof f);
      return f;
    } else if constexpr (T == DType::bf16) {
      std::uint16_t h;
      std::memcpy(&h, row + p * 2, sizeof h);
      return bf16_scalar(h);
    } else if constexpr (T == DType::f16) {
      std::uint16_t h;
      std::memcpy(&h, row + p * 2, sizeof h);
      return S::f16_scalar(h);
    } else {
      return e4m3[static_cast<std::uint8_t>(row[p])] * scale;
    }
  }

  // L elements starting at row[p] as fp32 (fp8 unscaled).
  template <DType T>
  static V vec(const std::byte* row, std::int64_t p) {
    if constexpr (T == DType::f32) return S::f32(row + p * 4);
    if constexpr (T == DType::bf16) return S::bf16(row + p * 2);
    if constexpr (T == DType::f16) return S::f16(row + p * 2);
    if constexpr (T == DType::fp8) return S::fp8(row + p);
  }

  // The same for the decode loops, whose fp8 rows are scanned for NaN codes separately
  // (fp8_nan): fp8 converts without its NaN branch.
  template <DType T>
  static V vec_scanned(const std::byte* row, std::int64_t p) {
    if constexpr (T == DType::fp8) return S::fp8_finite(row + p);
    return vec<T>(row, p);
  }

  template <DType T>
  static void convert_typed(const std::byte* src, std::int64_t n, float scale, const float* e4m3,
                            float* dst) {
    if constexpr (T == DType::f32) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * 4);
      return;
    }
    const V sv = S::set1(scale);
    std::int64_t p = 0;
    if constexpr (T == DType::fp8) {
      // A span without NaN codes (the usual case) converts without the NaN branch.
      for (; p + S::kNanSpan <= n; p += S::kNanSpan) {
        const bool nan = S::nan_any(S::fp8_nan(S::nan_none(), src + p, S::kNanSpan));
        for (int u = 0; u < S::kNanSpan; u += L)
          S::store(dst + p + u, S::mul(nan ? vec<T>(src, p + u) : S::fp8_finite(src + p + u), sv));
      }
    }
    for (; p + L <= n; p += L) {
      V v = vec<T>(src, p);
      if constexpr (T == DType::fp8) v = S::mul(v, sv);
      S::store(dst + p, v);
    }
    for (; p < n; ++p) dst[p] = scalar<T>(src, p, scale, e4m3);
  }

  static void convert(const void* src, DType t, std::int64_t n, float scale, const float* e4m3,
                      float* dst) {
    const auto* s = static_cast<const std::byte*>(src);
    switch (t) {
      case DType::f32:
        return convert_typed<DType::f32>(s, n, scale, e4m3, dst);
      case DType::bf16:
        return convert_typed<DType::bf16>(s, n, scale, e4m3, dst);
      case DType::f16:
        return convert_typed<DType::f16>(s, n, scale, e4m3, dst);
      case DType::fp8:
        return convert_typed<DType::fp8>(s, n, scale, e4m3, dst);
      default:
        return;
    }
  }

  // ---- decode ----
  static constexpr int NB = kDecodeRows;
  static constexpr std::int64_t kAheadBytes = 16 * 1024;
  static constexpr int MB = S::kDecodeMB;

  // The tile the pipeline fetches while this one computes: its W rows and first K index.
  // block() spreads the prefetches over its own loop (one per row per step), so the loads of
  // tile t+S-1 are in flight while tile t computes, without a burst that fills the queues.
  struct Ahead {
    const char* rows[NB] = {};
    int nb = 0;
    std::int64_t k0 = 0;
  };

  template <DType T>
  static constexpr std::int64_t esize() {
    return T == DType::f32 ? 4 : (T == DType::fp8 ? 1 : 2);
  }

  // The ahead tile's rows, shifted so that element p of the current tile maps to the same
  // offset in the ahead tile (missing rows repeat row 0); null: nothing to prefetch.
  struct PrefetchRows {
    const char* row[NB] = {};
    bool on = false;
  };
  template <DType T>
  static PrefetchRows prefetch_rows(const Ahead* ahead, std::int64_t k0) {
    PrefetchRows r;
    if (ahead == nullptr || ahead->nb == 0) return r;
    r.on = true;
    for (int j = 0; j < NB; ++j)
      r.row[j] = ahead->rows[j < ahead->nb ? j : 0] + (ahead->k0 - k0) * esize<T>();
    return r;
  }
  // One prefetch per 64-byte line of each ahead row (steps smaller than a line skip), into L1,
  // or with kL2 into L2.
  template <DType T, bool kL2 = false>
  static void prefetch_ahead(const PrefetchRows& pf, std::int64_t p) {
    constexpr std::int64_t step = L * esize<T>();
    if (!pf.on) return;
    if constexpr (step < 64)
      if (((p * esize<T>()) & 63) >= step) return;
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      if constexpr (kL2)
        prefetch_line_l2(pf.row[j] + p * esize<T>());
      else
        prefetch_line(pf.row[j] + p * esize<T>());
    }
  }

  // Calls step(p) for p = b0, b0 + L, ... < b1 (b0 a multiple of 64). fp8 rows are scanned
  // for NaN codes on the way, one S::fp8_nan per kNanSpan bytes of each row, all rows into one
  // accumulator (see nan_rows); the steps of a span run unrolled, and the span issues the
  // prefetches (its step functions issue none).
  template <DType T, bool kL2, int R, class Step>
  static void steps_scanned(std::int64_t b0, std::int64_t b1, const std::byte* const (&rows)[R],
                            int nr, typename S::NanAcc& nan, const PrefetchRows& pf, Step&& step) {
    std::int64_t p = b0;
    if constexpr (T == DType::fp8) {
      for (; p + S::kNanSpan <= b1; p += S::kNanSpan) {
        if (pf.on && (p & 63) == 0)  // one prefetch per line of each ahead row
          for (int u = 0; u < S::kNanSpan; u += 64) prefetch_ahead<T, kL2>(pf, p + u);
        for (int j = 0; j < nr; ++j) nan = S::fp8_nan(nan, rows[j] + p, S::kNanSpan);
#pragma GCC unroll 8
        for (int u = 0; u < S::kNanSpan / L; ++u) step(p + u * L);
      }
      if (p < b1) {
        for (int j = 0; j < nr; ++j) nan = S::fp8_nan(nan, rows[j] + p, b1 - p);
        for (std::int64_t q = p; q < b1; q += 64) prefetch_ahead<T, kL2>(pf, q);
      }
    }
    // Unrolled: one step per iteration reloads its bound and tests the prefetch flag every 16 FMAs.
#pragma GCC unroll 4
    for (; p < b1; p += L) step(p);
  }

  // After a scan found a NaN code somewhere in rows[0..nr) over [k0, k1) (rare): bit j set
  // when row j has one.
  static unsigned nan_rows(const std::byte* const* rows, int nr, std::int64_t k0, std::int64_t k1) {
    unsigned hit = 0;
    for (int j = 0; j < nr; ++j) {
      typename S::NanAcc nan = S::nan_none();
      for (std::int64_t p = k0; p < k1; p += S::kNanSpan)
        nan = S::fp8_nan(nan, rows[j] + p, std::min<std::int64_t>(S::kNanSpan, k1 - p));
      if (S::nan_any(nan)) hit |= 1u << j;
    }
    return hit;
  }

  // Whether block() reads the tile [k0, k1) one W row after another (row_order) instead of a vector
  // of each row in turn: fp32 W whose tile is all of K of rows that lie back to back (ldw = K), so
  // that the loads reach memory as one stream in address order. A vector of each row in turn is
  // four streams of a row each, too short for the prefetchers to follow (M = 1, K = 128, cold: half
  // the rate of a plain read); with K in tiles (4096 on) the rows are separate streams and row by
  // row loses. With more rows of A each W vector costs their loads from L1 too: up to K = 512, and
  // on AVX2 not at all (kRowOrderMaxMB). 16-bit W does not gain (and loses at M = 4).
  template <DType T, int MBc>
  static bool row_order_pays(const DecodeArgs& g, std::int64_t k0, std::int64_t k1) {
    if constexpr (T != DType::f32 || MBc > S::kRowOrderMaxMB) return false;
    const std::int64_t bytes = (k1 - k0) * esize<T>();
    return k0 == 0 && k1 == g.k - g.k % L && short_rows_in_order(g.ldw, g.k, bytes, MBc == 1);
  }

  template <DType T, int MBc, int NBc>
  static void row_order(const std::byte* const (&rows)[NBc], const float* const (&arow)[MBc],
                        std::int64_t b0, std::int64_t b1, bool far, V (&acc)[MBc][NBc]) {
    // No software prefetch: the rows in address order are one stream the hardware prefetcher
    // follows. (With 4 rows of A a burst of prefetches of the next tile at the block's start only
    // gets in the way of the tile's own loads; with fewer rows it is mixed.) From two rows of A,
    // with `far`, the line kDecodeFarBytes on into L2 (kernels.hpp).
    constexpr std::int64_t line = 64 / esize<T>();  // values per line: a prefetch per line
#pragma GCC unroll 4
    for (int j = 0; j < NBc; ++j) {
#pragma GCC unroll 4
      for (std::int64_t p = b0; p < b1; p += L) {
        if constexpr (MBc > 1)
          if (far && p % line == 0) prefetch_line_l2(rows[j] + p * esize<T>() + kDecodeFarBytes);
        const V w = vec<T>(rows[j], p);
#pragma GCC unroll 4
        for (int i = 0; i < MBc; ++i) acc[i][j] = S::fma(S::load(arow[i] + p), w, acc[i][j]);
      }
    }
  }

  // acc[i][j] (vectors in accbuf, row stride NB) += sum over p in [k0,k1) of
  // a[i0+i][p] * w[j0+j][p], for MBc rows of A and NBc rows of W. W comes from its storage
  // (kFromBuf = false) or from fp32 rows converted into wbuf (row stride ldb).
  // kRaw (fp8 with one or two rows of A, scaled: DecodeArgs::a_up): W's values as their fp32
  // patterns (value * 2^-120, S::fp8_raw) against A * 2^64, and each scale block's sum times
  // 2^56 before its scale (scale_a).
  template <DType T, int MBc, int NBc, bool kFromBuf, bool kRaw = false>
  static void block(const DecodeArgs& g, std::int64_t i0, std::int64_t j0, std::int64_t k0,
                    std::int64_t k1, V* accbuf, const float* wbuf, std::int64_t ldb,
                    const Ahead* ahead, bool direct) {
    // fp8 with few rows of A: sum each 128-wide scale block unscaled and apply its scale
    // once (one FMA per block instead of a multiply per vector); the registers allow it up
    // to two rows.
    constexpr bool kFold = T == DType::fp8 && !kFromBuf && MBc <= 2;
    if constexpr (kFold && !kRaw)
      if (g.a_up != nullptr)
        return block<T, MBc, NBc, kFromBuf, true>(g, i0, j0, k0, k1, accbuf, wbuf, ldb, ahead,
                                                  direct);
    V acc[MBc][NBc];
    for (int i = 0; i < MBc; ++i)
      for (int j = 0; j < NBc; ++j) acc[i][j] = direct ? S::zero() : accbuf[(i0 + i) * NB + j];
    const std::byte* rows[NBc];
    for (int j = 0; j < NBc; ++j)
      rows[j] = static_cast<const std::byte*>(g.w) + (j0 + j) * g.ldw * esize<T>();
    const float* arow[MBc];
    for (int i = 0; i < MBc; ++i)
      arow[i] = kRaw ? g.a_up + (i0 + i) * g.lda_up : g.a + (i0 + i) * g.lda;
    const PrefetchRows pf = prefetch_rows<T>(ahead, k0);
    // fp8: a NaN code anywhere in row j makes column j's sums NaN (set after the loop).
    typename S::NanAcc nan = S::nan_none();

    for (std::int64_t b0 = k0; b0 < k1;) {
      // fp8 block scales change every 128 K: one segment per scale block.
      const std::int64_t b1 =
          (T == DType::fp8 && !kFromBuf) ? std::min(k1, (b0 / kFp8Block + 1) * kFp8Block) : k1;
      V sc[NBc];
      if constexpr (T == DType::fp8 && !kFromBuf)
        for (int j = 0; j < NBc; ++j)
          sc[j] = S::set1(g.w_scale[((j0 + j) / kFp8Block) * g.ld_wscale + b0 / kFp8Block]);
      V part[MBc][NBc];
      if constexpr (kFold)
        for (int i = 0; i < MBc; ++i)
          for (int j = 0; j < NBc; ++j) part[i][j] = S::zero();
      // The prefetch goes into L2: into L1 it fills the L1 with lines the loop reaches 16 KiB
      // later; from L2 the L1's own prefetcher brings them on. (kFromBuf: no prefetch, tile()
      // passes no ahead; the tile it converts once prefetches into L1.)
      auto step = [&](std::int64_t p) __attribute__((always_inline)) {
        if constexpr (T != DType::fp8 || kFromBuf) prefetch_ahead<T, true>(pf, p);
        V w[NBc];
#pragma GCC unroll 4
        for (int j = 0; j < NBc; ++j) {
          if constexpr (kFromBuf) {
            w[j] = S::load(wbuf + j * ldb + (p - k0));
          } else if constexpr (kRaw) {
            w[j] = S::fp8_raw(rows[j] + p);
          } else {
            w[j] = vec_scanned<T>(rows[j], p);
            if constexpr (T == DType::fp8 && !kFold) w[j] = S::mul(w[j], sc[j]);
          }
        }
#pragma GCC unroll 4
        for (int i = 0; i < MBc; ++i) {
          const V av = S::load(arow[i] + p);
#pragma GCC unroll 4
          for (int j = 0; j < NBc; ++j) {
            if constexpr (kFold) {
              part[i][j] = S::fma(av, w[j], part[i][j]);
            } else {
              acc[i][j] = S::fma(av, w[j], acc[i][j]);
            }
          }
        }
      };
      if constexpr (kFromBuf) {
        for (std::int64_t p = b0; p < b1; p += L) step(p);
      } else if (row_order_pays<T, MBc>(g, k0, k1)) {
        row_order<T, MBc, NBc>(rows, arow, b0, b1, g.stages > 1, acc);
      } else {
        steps_scanned<T, true>(b0, b1, rows, NBc, nan, pf, step);
      }
      if constexpr (kFold)
        for (int i = 0; i < MBc; ++i)
          for (int j = 0; j < NBc; ++j)
            acc[i][j] =
                S::fma(kRaw ? S::mul(part[i][j], S::set1(0x1p56f)) : part[i][j], sc[j], acc[i][j]);
      b0 = b1;
    }
    if constexpr (T == DType::fp8 && !kFromBuf)
      if (S::nan_any(nan)) {
        const unsigned hit = nan_rows(rows, NBc, k0, k1);
        for (int j = 0; j < NBc; ++j)
          if ((hit >> j) & 1)
            for (int i = 0; i < MBc; ++i)
              acc[i][j] = S::set1(std::numeric_limits<float>::quiet_NaN());
      }
    if (direct) {  // all of K in this call: reduce the registers straight into the output
      for (int i = 0; i < MBc; ++i) {
        float* out = g.out + (i0 + i) * g.ldo + (j0 - g.n0);
        if constexpr (NBc == NB) {
          _mm_storeu_ps(out, S::hsum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
        } else {
          for (int j = 0; j < NBc; ++j) out[j] = S::hsum(acc[i][j]);
        }
      }
      return;
    }
    for (int i = 0; i < MBc; ++i)
      for (int j = 0; j < NBc; ++j) accbuf[(i0 + i) * NB + j] = acc[i][j];
  }

  // `direct`: [k0, k1) is all of K (one tile, no scalar tail): the sums go straight to the
  // output from registers, without the accumulator buffer and finish().
  template <DType T, int NBc, bool kFromBuf>
  static void rows_of_a(const DecodeArgs& g, std::int64_t j0, std::int64_t k0, std::int64_t k1,
                        V* accbuf, const float* wbuf, std::int64_t ldb, const Ahead* ahead,
                        bool direct) {
    std::int64_t i0 = 0;
    // Only the first block of A rows issues the prefetches (the others re-read W from L1).
    for (; i0 + MB <= g.m; i0 += MB)
      block<T, MB, NBc, kFromBuf>(g, i0, j0, k0, k1, accbuf, wbuf, ldb, i0 == 0 ? ahead : nullptr,
                                  direct);
    if (i0 > 0) ahead = nullptr;
    switch (g.m - i0) {
      case 1:
        return block<T, 1, NBc, kFromBuf>(g, i0, j0, k0, k1, accbuf, wbuf, ldb, ahead, direct);
      case 2:
        if constexpr (MB > 2)
          return block<T, 2, NBc, kFromBuf>(g, i0, j0, k0, k1, accbuf, wbuf, ldb, ahead, direct);
        return;
      case 3:
        if constexpr (MB > 3)
          return block<T, 3, NBc, kFromBuf>(g, i0, j0, k0, k1, accbuf, wbuf, ldb, ahead, direct);
        return;
      default:
        return;
    }
  }

  // fp8 and fp16 cost several operations per vector to convert: with more than one block of A
  // rows, each W tile is converted once into scratch (fp32) and every row block reuses it. bf16
  // (one shift) is converted again per row block, straight from the loaded registers.
  template <DType T>
  static bool converts_once(const DecodeArgs& g) {
    return (T == DType::fp8 || T == DType::f16) && g.m > MB;
  }

  // One k tile [k0,k1) (multiple of L) of W rows j0..j0+nb.
  template <DType T>
  static void tile(const DecodeArgs& g, std::int64_t j0, int nb, std::int64_t k0, std::int64_t k1,
                   V* accbuf, const Ahead* ahead, bool direct) {
    if (!converts_once<T>(g)) {
      if (nb == NB)
        return rows_of_a<T, NB, false>(g, j0, k0, k1, accbuf, nullptr, 0, ahead, direct);
      for (int j = 0; j < nb; ++j)
        rows_of_a<T, 1, false>(g, j0 + j, k0, k1, accbuf + j, nullptr, 0, j == 0 ? ahead : nullptr,
                               direct);
      return;
    }
    // Many rows of A: convert the W tile once into L1 (fp32) and reuse it for every row block.
    // The rows are converted side by side (L values of each in turn) so their memory streams
    // are in flight together.
    const std::int64_t ldb = g.k_tile;
    const std::byte* rows[NB];
    for (int j = 0; j < nb; ++j)
      rows[j] = static_cast<const std::byte*>(g.w) + (j0 + j) * g.ldw * esize<T>();
    const PrefetchRows pf = prefetch_rows<T>(ahead, k0);
    for (std::int64_t b0 = k0; b0 < k1;) {
      const std::int64_t b1 = T == DType::fp8 ? std::min(k1, (b0 / kFp8Block + 1) * kFp8Block) : k1;
      V sc[NB];
      if constexpr (T == DType::fp8)
        for (int j = 0; j < nb; ++j)
          sc[j] = S::set1(g.w_scale[((j0 + j) / kFp8Block) * g.ld_wscale + b0 / kFp8Block]);
      typename S::NanAcc nan = S::nan_none();
      steps_scanned<T, false>(b0, b1, rows, nb, nan, pf, [&](std::int64_t p) {
        if constexpr (T != DType::fp8) prefetch_ahead<T>(pf, p);
        for (int j = 0; j < nb; ++j) {
          V v = vec_scanned<T>(rows[j], p);
          if constexpr (T == DType::fp8) v = S::mul(v, sc[j]);
          S::store(g.scratch + j * ldb + (p - k0), v);
        }
      });
      const unsigned hit = S::nan_any(nan) ? nan_rows(rows, nb, b0, b1) : 0u;
      for (int j = 0; j < nb; ++j)
        if ((hit >> j) & 1)
          std::fill(g.scratch + j * ldb + (b0 - k0), g.scratch + j * ldb + (b1 - k0),
                    std::numeric_limits<float>::quiet_NaN());
      b0 = b1;
    }
    if (nb == NB)
      return rows_of_a<T, NB, true>(g, j0, k0, k1, accbuf, g.scratch, ldb, nullptr, direct);
    for (int j = 0; j < nb; ++j)
      rows_of_a<T, 1, true>(g, j0 + j, k0, k1, accbuf + j, g.scratch + j * ldb, ldb, nullptr,
                            direct);
  }

  // out[i][j0..j0+nb) = the sums of the accumulators plus the scalar K tail [kv, k). The NB
  // accumulators of a row of A reduce together (one tree, not NB horizontal sums).
  template <DType T>
  static void finish(const DecodeArgs& g, std::int64_t j0, int nb, std::int64_t kv, V* accbuf) {
    static_assert(NB == 4, "hsum4 reduces four accumulators");
    for (std::int64_t i = 0; i < g.m; ++i) {
      const V* acc = accbuf + i * NB;
      float* out = g.out + i * g.ldo + (j0 - g.n0);
      const __m128 sums = S::hsum4(acc[0], acc[1], acc[2], acc[3]);
      if (nb == NB && kv == g.k) {
        _mm_storeu_ps(out, sums);
        continue;
      }
      alignas(16) float s[NB];
      _mm_store_ps(s, sums);
      for (int j = 0; j < nb; ++j) {
        const std::byte* row = static_cast<const std::byte*>(g.w) + (j0 + j) * g.ldw * esize<T>();
        for (std::int64_t p = kv; p < g.k; ++p) {
          const float scale = T == DType::fp8
                                  ? g.w_scale[((j0 + j) / kFp8Block) * g.ld_wscale + p / kFp8Block]
                                  : 1.0f;
          s[j] = S::fma1(g.a[i * g.lda + p], scalar<T>(row, p, scale, g.e4m3), s[j]);
        }
        out[j] = s[j];
      }
    }
  }

  // fp8 W with one or two rows of A (block's kFold): A * 2^64 into `dst` (rows ld apart), so that
  // W's values can go in as their fp32 patterns, value * 2^-120, without a multiply each (the
  // conversion's share of the loop's vector operations falls from 5 to 4 of 5.5 per vector; it
  // is compute-bound on AVX2). The products then carry 2^-56, which each scale block's sum loses
  // again (exactly: powers of two), so every sum and rounding is the unscaled one's, bit for
  // bit, where no product leaves fp32's normal range: refused (false) when a value of A is not
  // finite or |a| >= 2^62 (A * 2^64 must not overflow), or when the largest |a| is below 2^-40
  // and not 0 (products of W's smallest values, 2^-9, with A's below 2^-61 underflow; with a
  // value of A of 2^-40 or more in the row the error is far below the sum's own rounding).
  static bool scale_a(const DecodeArgs& g, float* dst, std::int64_t ld) {
    float most = 0.0f;
    bool bad = false;
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t p = 0; p < g.k; ++p) {
        const float v = g.a[i * g.lda + p] < 0 ? -g.a[i * g.lda + p] : g.a[i * g.lda + p];
        bad |= !(v < 0x1p62f);
        most = v > most ? v : most;
      }
    if (bad || (most > 0.0f && most < 0x1p-40f)) return false;
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t p = 0; p < g.k; ++p) dst[i * ld + p] = g.a[i * g.lda + p] * 0x1p64f;
    return true;
  }

  template <DType T>
  static void decode_typed(const DecodeArgs& g0) {
    DecodeArgs g = g0;
    // fp8 with one or two rows of A and at least kScaleMinRows W rows (against which the pass over
    // A is small): A scaled (scale_a), after the accumulators in scratch.
    constexpr std::int64_t kScaleMinRows = 32;
    if constexpr (T == DType::fp8)
      if (g.m <= 2 && g.n1 - g.n0 >= kScaleMinRows) {
        float* up = g.scratch + decode_a_up_floats(g.k_tile);
        const std::int64_t ld = (g.k + 15) / 16 * 16;
        if (scale_a(g, up, ld)) g.a_up = up, g.lda_up = ld;
      }
    V* accbuf = reinterpret_cast<V*>(g.scratch + decode_acc_floats(g.k_tile));
    const std::int64_t kv = g.k - g.k % L;
    // fp32 W with fewer rows of A than a register block is a pure stream the hardware prefetcher
    // follows; software prefetches, into L1 or L2, only cost it load slots (M = 1, 16384 x 4096:
    // 6.3 ms with them against 5.6 without), while from a register block of rows on they pay. So
    // is fp16 W against one row of A in rows longer than a page (1 x 28672 x 4096 and 1 x 4096 x
    // 14336: 1.13-1.20x without them; rows of a page, where the hardware prefetcher stops, level;
    // M 2-8 and fp8 slower without).
    const bool sw_prefetch = g.stages > 1 && !(T == DType::f32 && g.m < MB) &&
                             !(T == DType::f16 && g.m == 1 && g.k * esize<T>() > kDecodePageBytes);
    // The tiles serve the software prefetch's pipeline (and W converted once a tile, from more
    // rows of A than a register block): without either, all of K is one tile, and the sums stay
    // in registers instead of going to accbuf and back between tiles (against tiles, Zen 5
    // guest, 2 threads: fp16 1 x 4096 x 14336 1.07x, fp32 2 x 4096 x 14336 1.17x, 3 x 4096 x
    // 7168 1.10x, 1 x 16384 x 4096 1.09x).
    const std::int64_t kt =
        sw_prefetch || converts_once<T>(g) ? g.k_tile : std::max<std::int64_t>(kv, 1);
    const std::int64_t ktiles = (kv + kt - 1) / kt;
    const std::int64_t groups = (g.n1 - g.n0 + NB - 1) / NB;
    auto group_rows = [&](std::int64_t grp) {
      return static_cast<int>(std::min<std::int64_t>(NB, g.n1 - (g.n0 + grp * NB)));
    };
    if (ktiles == 0) {
      for (std::int64_t grp = 0; grp < groups; ++grp) {
        for (std::int64_t i = 0; i < g.m * NB; ++i) accbuf[i] = S::zero();
        finish<T>(g, g.n0 + grp * NB, group_rows(grp), kv, accbuf);
      }
      return;
    }
    // Tiles: (row group, k tile) in order. The pipeline's load(t+S-1) names the tile to fetch
    // ahead; compute(t) issues its prefetches while it streams tile t.
    // Short rows make small tiles: fetch at least kAheadBytes of W ahead (a DRAM latency's
    // worth of streaming), i.e. `skip` tiles beyond the pipeline's own distance.
    const std::int64_t tile_bytes = NB * std::min(kt, kv) * esize<T>();
    const std::int64_t total = groups * ktiles;
    const std::int64_t skip =
        sw_prefetch ? std::max<std::int64_t>(
                          0, (kAheadBytes + tile_bytes - 1) / tile_bytes - (g.stages - 1))
                    : 0;
    // All of K in one tile and no scalar tail: the sums leave the registers straight to out.
    const bool direct = ktiles == 1 && kv == g.k;
    Ahead ahead;
    bool have_ahead = false;
    auto load = [&](std::int64_t tt, int) {
      const std::int64_t t = tt + skip;
      have_ahead = sw_prefetch && t < total;
      if (!have_ahead) return;
      const std::int64_t grp = t / ktiles;
      ahead.nb = group_rows(grp);
      ahead.k0 = (t % ktiles) * kt;
      for (int j = 0; j < ahead.nb; ++j)
        ahead.rows[j] = static_cast<const char*>(g.w) + (g.n0 + grp * NB + j) * g.ldw * esize<T>();
    };
    auto compute = [&](std::int64_t t, int) {
      const std::int64_t grp = t / ktiles, kk = t % ktiles;
      const std::int64_t j0 = g.n0 + grp * NB, k0 = kk * kt;
      const int nb = group_rows(grp);
      if (kk == 0 && !direct)
        for (std::int64_t i = 0; i < g.m * NB; ++i) accbuf[i] = S::zero();
      // The last tiles have nothing further to fetch.
      const bool pf = have_ahead && t + g.stages - 1 + skip < total;
      tile<T>(g, j0, nb, k0, std::min(kv, k0 + kt), accbuf, pf ? &ahead : nullptr, direct);
      if (kk == ktiles - 1 && !direct) finish<T>(g, j0, nb, kv, accbuf);
    };
    tile::run_pipeline(groups * ktiles, g.stages, load, compute);
  }

  static void decode(const DecodeArgs& g) {
    switch (g.w_type) {
      case DType::f32:
        return decode_typed<DType::f32>(g);
      case DType::bf16:
        return decode_typed<DType::bf16>(g);
      case DType::f16:
        return decode_typed<DType::f16>(g);
      case DType::fp8:
        return decode_typed<DType::fp8>(g);
      default:
        return;
    }
  }

  // A row of C from fp32 sums (WriteRow, kernels.hpp): C = fma(beta, C, alpha * sum), 16-bit C
  // rounded as dtype.hpp rounds; beta == 0: C is not read.
  static void write_row(DType t, const float* src, std::int64_t n, float alpha, float beta,
                        void* out) {
    const V va = S::set1(alpha), vb = S::set1(beta);
    std::int64_t j = 0;
    if (t == DType::f32) {
      auto* dst = static_cast<float*>(out);
      for (; j + L <= n; j += L) {
        V v = S::mul(va, S::load(src + j));
        if (beta != 0.0f) v = S::fma(vb, S::load(dst + j), v);
        S::store(dst + j, v);
      }
      for (; j < n; ++j) {
        const float ab = alpha * src[j];
        dst[j] = beta != 0.0f ? S::fma1(beta, dst[j], ab) : ab;
      }
      return;
    }
    auto* dst = static_cast<std::uint16_t*>(out);
    const bool bf = t == DType::bf16;
    for (; j + L <= n; j += L) {
      V v = S::mul(va, S::load(src + j));
      if (beta != 0.0f) v = S::fma(vb, S::load16(bf, dst + j), v);
      S::store16(bf, dst + j, v);
    }
    for (; j < n; ++j) {
      const float ab = alpha * src[j];
      const float c = bf ? bf16_to_f32(dst[j]) : f16_to_f32(dst[j]);
      const float w = beta != 0.0f ? S::fma1(beta, c, ab) : ab;
      dst[j] = bf ? f32_to_bf16(w) : f32_to_f16(w);
    }
  }
};

}  // namespace attain::gemm::detail
