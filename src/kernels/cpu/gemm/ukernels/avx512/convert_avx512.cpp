// Packing helpers, AVX-512: dtype conversion of contiguous runs (16 values per step), the
// write-back of C rows, and the interleave of panels of 16 rows and more by 16x16 transposes.
#include <cmath>

#include "attain/dtype.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

void convert_avx512(const void* src, DType t, std::int64_t n, float scale, const float* e4m3,
                    float* dst) {
  Stream<Avx512Load>::convert(src, t, n, scale, e4m3, dst);
}

void write_row_avx512(DType t, const float* src, std::int64_t n, float alpha, float beta,
                      void* out) {
  Stream<Avx512Load>::write_row(t, src, n, alpha, beta, out);
}

// GCC 12 reports the _mm512_undefined_*() inside its own intrinsics as uninitialized (as in
// simd_avx512.hpp); the values are fully defined.
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace {

// Rows 0..15 x columns 0..15 of src (row stride ld), transposed into dst (row stride ldd):
// unpack pairs of rows, pick 64-bit pairs, then two rounds of 128-bit lane shuffles.
inline void transpose16x16(const float* src, std::int64_t ld, float* dst, std::int64_t ldd) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    const __m512 a = _mm512_loadu_ps(src + 2 * i * ld), b = _mm512_loadu_ps(src + (2 * i + 1) * ld);
    t[2 * i] = _mm512_unpacklo_ps(a, b);      // lane L: a[4L], b[4L], a[4L+1], b[4L+1]
    t[2 * i + 1] = _mm512_unpackhi_ps(a, b);  // lane L: a[4L+2], b[4L+2], a[4L+3], b[4L+3]
  }
  // u[4g + c], lane L: column 4L + c of rows 4g..4g+3.
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
  }
  for (int c = 0; c < 4; ++c) {
    // lanes 0-1 (lo) or 2-3 (hi) of the four row groups, then one lane of each per column.
    const __m512 v_lo = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
    const __m512 v_hi = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee);
    const __m512 w_lo = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
    const __m512 w_hi = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
    _mm512_storeu_ps(dst + (0 + c) * ldd, _mm512_shuffle_f32x4(v_lo, w_lo, 0x88));
    _mm512_storeu_ps(dst + (4 + c) * ldd, _mm512_shuffle_f32x4(v_lo, w_lo, 0xdd));
    _mm512_storeu_ps(dst + (8 + c) * ldd, _mm512_shuffle_f32x4(v_hi, w_hi, 0x88));
    _mm512_storeu_ps(dst + (12 + c) * ldd, _mm512_shuffle_f32x4(v_hi, w_hi, 0xdd));
  }
}

}  // namespace

void interleave_avx512(const float* src, std::int64_t ld, int rows, std::int64_t k, int R,
                       float* dst) {
  // A panels (12 rows) and narrow edge panels: 8x8 and 4x4 transposes. So too where the rows are
  // a multiple of 4 KiB apart (K = 1024, 2048, 4096, 7168 fp32): each row's line then falls in
  // the same L1 set (64 sets of 64 bytes), and sixteen rows in its eight ways evict each other
  // before they are read; eight rows fit (a 64-row panel of K = 2048 rows: 0.22 ns a value against
  // 0.28-0.32 with 16x16 transposes).
  if (rows < 16 || ld * static_cast<std::int64_t>(sizeof(float)) % 4096 == 0) {
    interleave_avx2(src, ld, rows, k, R, dst);
    return;
  }
  const int full = rows - rows % 16;
  const std::int64_t kv = k - k % 16;
  // The lines of the transpose four ahead in this order are fetched before each one: 64 values
  // on in the same rows, or in the next 16 rows where these are shorter (attention's items, K
  // 128 bf16 as 64 words a row, whose loads otherwise wait on L3: 90% of the transposes' samples).
  int fr = 0;
  std::int64_t fp = 0;
  auto ahead = [&] {
    if ((fp += 16) >= kv) {
      fp = 0;
      fr += 16;
    }
  };
  for (int i = 0; i < 4; ++i) ahead();
  for (int r0 = 0; r0 < full; r0 += 16) {
    for (std::int64_t p = 0; p < kv; p += 16) {
      if (fr < full)
        for (int r = 0; r < 16; ++r)
          _mm_prefetch(reinterpret_cast<const char*>(src + (fr + r) * ld + fp), _MM_HINT_T0);
      ahead();
      transpose16x16(src + r0 * ld + p, ld, dst + p * R + r0, R);
    }
    for (std::int64_t p = kv; p < k; ++p)
      for (int r = r0; r < r0 + 16; ++r) dst[p * R + r] = src[r * ld + p];
  }
  for (std::int64_t p = 0; p < k; ++p) {
    for (int r = full; r < rows; ++r) dst[p * R + r] = src[r * ld + p];
    for (int r = rows; r < R; ++r) dst[p * R + r] = 0.0f;
  }
}

}  // namespace attain::gemm::detail
