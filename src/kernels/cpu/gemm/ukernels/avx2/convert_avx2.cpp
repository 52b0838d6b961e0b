// Packing helpers, AVX2: dtype conversion of contiguous runs and the 8x8-transpose interleave.
#include <cmath>

#include "attain/dtype.hpp"
#include "kernels/cpu/gemm/ukernels/avx2/simd_avx2.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

void convert_avx2(const void* src, DType t, std::int64_t n, float scale, const float* e4m3,
                  float* dst) {
  Stream<Avx2Load>::convert(src, t, n, scale, e4m3, dst);
}

void write_row_avx2(DType t, const float* src, std::int64_t n, float alpha, float beta, void* out) {
  Stream<Avx2Load>::write_row(t, src, n, alpha, beta, out);
}

namespace {

// r[i][q] -> r[q][i]: eight rows of eight values transposed in registers.
inline void transpose8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Rows r0..r0+8 x columns p0..p0+8 of src, transposed into dst[(p0+q)*R + r0 ..].
inline void transpose8x8(const float* src, std::int64_t ld, float* dst, std::int64_t ldd) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld);
  transpose8(r);
  for (int q = 0; q < 8; ++q) _mm256_storeu_ps(dst + q * ldd, r[q]);
}

// Rows [r0, rows) of k values [p0, k) one value at a time, rows [rows, R) zero.
void rows_by_value(const float* src, std::int64_t ld, int r0, int rows, std::int64_t p0,
                   std::int64_t k, int R, float* dst) {
  for (std::int64_t p = p0; p < k; ++p) {
    for (int r = r0; r < rows; ++r) dst[p * R + r] = src[r * ld + p];
    for (int r = rows; r < R; ++r) dst[p * R + r] = 0.0f;
  }
}

// A whole panel of R = 5..7 rows (AVX2's 6-row A panels), 4 < rows <= R, by 8x8 transposes
// with rows past `rows` read as zeros. Each k's R values are stored as 8, in increasing k: the
// extra lanes land on the next k's first values, which its store then writes; the panel's last
// k is stored masked. A 4x4 transpose and two rows one value at a time instead make the single
// values a third of the packing's cost.
void interleave_narrow(const float* src, std::int64_t ld, int rows, std::int64_t k, int R,
                       float* dst) {
  const std::int64_t kv = k - k % 8;
  const __m256i last =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(R), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (std::int64_t p = 0; p < kv; p += 8) {
    if (p % 16 == 0) prefetch_rows(src + p, ld, rows);
    __m256 r[8];
    for (int i = 0; i < 8; ++i)
      r[i] = i < rows ? _mm256_loadu_ps(src + i * ld + p) : _mm256_setzero_ps();
    transpose8(r);
    float* d = dst + p * R;
    for (int q = 0; q < 7; ++q) _mm256_storeu_ps(d + q * R, r[q]);
    if (p + 8 < k)
      _mm256_storeu_ps(d + 7 * R, r[7]);
    else
      _mm256_maskstore_ps(d + 7 * R, last, r[7]);
  }
  rows_by_value(src, ld, 0, rows, kv, k, R, dst);
}

}  // namespace

void interleave_avx2(const float* src, std::int64_t ld, int rows, std::int64_t k, int R,
                     float* dst) {
  if (R > 4 && R < 8 && rows > 4) {
    interleave_narrow(src, ld, rows, k, R, dst);
    return;
  }
  const int full = rows - rows % 8;  // rows done by 8x8 transposes
  const std::int64_t kv = k - k % 8;
  for (int r0 = 0; r0 < full; r0 += 8) {
    for (std::int64_t p = 0; p < kv; p += 8) {
      if (p % 16 == 0) prefetch_rows(src + r0 * ld + p, ld, 8);
      transpose8x8(src + r0 * ld + p, ld, dst + p * R + r0, R);
    }
    for (std::int64_t p = kv; p < k; ++p)
      for (int r = r0; r < r0 + 8; ++r) dst[p * R + r] = src[r * ld + p];
  }
  // A block of 4 rows by 4x4 transposes (the 6- and 12-row A panels end with one).
  int done = full;
  if (rows - full >= 4) {
    const float* s0 = src + full * ld;
    const std::int64_t k4 = k - k % 4;
    for (std::int64_t p = 0; p < k4; p += 4) {
      if (p % 16 == 0) prefetch_rows(s0 + p, ld, 4);
      __m128 r0 = _mm_loadu_ps(s0 + p), r1 = _mm_loadu_ps(s0 + ld + p);
      __m128 r2 = _mm_loadu_ps(s0 + 2 * ld + p), r3 = _mm_loadu_ps(s0 + 3 * ld + p);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(dst + p * R + full, r0);
      _mm_storeu_ps(dst + (p + 1) * R + full, r1);
      _mm_storeu_ps(dst + (p + 2) * R + full, r2);
      _mm_storeu_ps(dst + (p + 3) * R + full, r3);
    }
    for (std::int64_t p = k4; p < k; ++p)
      for (int r = full; r < full + 4; ++r) dst[p * R + r] = src[r * ld + p];
    done = full + 4;
  }
  rows_by_value(src, ld, done, rows, 0, k, R, dst);
}

}  // namespace attain::gemm::detail
