// No heap allocation per GEMM call once its buffers have grown: every path and form, on one
// and on two threads. This executable replaces the global operator new (and counts it), so the
// test lives alone here rather than in test_gemm.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "attain/dtype.hpp"
#include "attain/gemm.hpp"
#include "attain/threadpool.hpp"

namespace {
std::atomic<long> g_news{0};
std::atomic<bool> g_counting{false};

// A place for a debugger's breakpoint: `break counted_new` shows where a counted one came from.
__attribute__((noinline)) void counted_new() {
  g_news.fetch_add(1, std::memory_order_relaxed);
}

void* counted(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) counted_new();
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t)
                ? std::aligned_alloc(align, (n + align - 1) / align * align)
                : std::malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) {
  return counted(n, 0);
}
void* operator new[](std::size_t n) {
  return counted(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace attain::gemm {
namespace {

// The allocations made by `run_call` on its third to fifth runs (the first two grow the
// engine's buffers and wake the pool's workers).
template <class F>
long news_after_warmup(F&& run_call) {
  run_call();
  run_call();
  g_news.store(0);
  g_counting.store(true);
  for (int r = 0; r < 3; ++r) run_call();
  g_counting.store(false);
  return g_news.load();
}

struct Operands {
  std::vector<float> a, c;
  std::vector<std::uint16_t> a16, w16;
  std::vector<float> w;
  std::vector<std::uint8_t> a8, w8;
  std::vector<float> a_scale, w_scale;
  explicit Operands(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t items = 1)
      : a(static_cast<std::size_t>(items * m * k), 0.5f),
        c(static_cast<std::size_t>(items * m * n)),
        a16(a.size(), 0x3f00),  // bf16 0.5
        w16(static_cast<std::size_t>(items * n * k), 0x3e80),
        w(w16.size(), 0.25f),
        a8(a.size(), 0x30),
        w8(w16.size(), 0x30),
        a_scale(static_cast<std::size_t>(items * m * ((k + 127) / 128)), 1.0f),
        w_scale(static_cast<std::size_t>(items * ((n + 127) / 128) * ((k + 127) / 128)), 1.0f) {}
};

Params params(Operands& o, std::int64_t m, std::int64_t n, std::int64_t k, DType a_type,
              DType b_type, int threads) {
  Params p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.threads = threads;
  p.a_type = a_type;
  p.b_type = b_type;
  p.a = a_type == DType::f32   ? static_cast<const void*>(o.a.data())
        : a_type == DType::fp8 ? static_cast<const void*>(o.a8.data())
                               : static_cast<const void*>(o.a16.data());
  p.b = b_type == DType::f32   ? static_cast<const void*>(o.w.data())
        : b_type == DType::fp8 ? static_cast<const void*>(o.w8.data())
                               : static_cast<const void*>(o.w16.data());
  if (a_type == DType::fp8) p.a_scale = o.a_scale.data();
  if (b_type == DType::fp8) p.b_scale = o.w_scale.data();
  p.c = o.c.data();
  return p;
}

TEST(GemmAllocation, NoneAfterWarmup) {
  struct Case {
    const char* what;
    std::int64_t m, n, k;
    DType a_type, b_type;
    const char* schedule;
  };
  const Case cases[] = {
      {"decode fp32 M=1", 1, 8, 4096, DType::f32, DType::f32, ""},
      {"decode fp32 M=8 panel", 8, 96, 1024, DType::f32, DType::f32, ""},
      {"decode bf16 pairs", 4, 64, 512, DType::bf16, DType::bf16, ""},
      {"decode fp16 W", 3, 64, 512, DType::f32, DType::f16, ""},
      {"decode fp8 x fp8", 2, 256, 512, DType::fp8, DType::fp8, ""},
      {"decode split-K", 1, 64, 4096, DType::f32, DType::f32, "split_k=2 grid=1x1"},
      {"packed fp32", 200, 300, 260, DType::f32, DType::f32, "path=packed"},
      {"packed bf16", 96, 160, 256, DType::bf16, DType::bf16, "path=packed"},
      {"direct fp32", 64, 512, 256, DType::f32, DType::f32, "path=direct"},
      {"swapped operands", 512, 64, 128, DType::bf16, DType::bf16, ""},
      {"automatic", 128, 128, 512, DType::f32, DType::f32, ""},
  };
  for (const int threads : {1, 2})
    for (const Case& cs : cases) {
      SCOPED_TRACE(std::string(cs.what) + " threads=" + std::to_string(threads));
      Operands o(cs.m, cs.n, cs.k);
      Params p = params(o, cs.m, cs.n, cs.k, cs.a_type, cs.b_type, threads);
      p.schedule = parse_schedule(cs.schedule);
      EXPECT_EQ(news_after_warmup([&] { gemm(p); }), 0);
    }
}

TEST(GemmAllocation, NoneAfterWarmupBatchedAndGrouped) {
  const std::int64_t items = 6, m = 4, n = 96, k = 256;
  for (const int threads : {1, 2})
    for (const Fuse fuse : {Fuse::automatic, Fuse::on, Fuse::off}) {
      SCOPED_TRACE("threads=" + std::to_string(threads) + " fuse=" + std::string(fuse_name(fuse)));
      Operands o(m, n, k, items);
      Params p = params(o, m, n, k, DType::bf16, DType::bf16, threads);
      p.schedule.fuse_items = fuse;
      EXPECT_EQ(news_after_warmup([&] { batched_gemm(p, items, {m * k, n * k, m * n, 0, 0}); }), 0);
      const std::int32_t counts[items] = {4, 0, 1, 3, 4, 2};
      EXPECT_EQ(news_after_warmup([&] { grouped_gemm_masked(p, items, counts); }), 0);
      const std::int32_t offsets[items + 1] = {0, 2, 2, 3, 4, 4, 4};
      EXPECT_EQ(news_after_warmup([&] { grouped_gemm_contiguous(p, items, offsets); }), 0);
    }
}

// The pool's jobs are passed by reference, not wrapped: running one allocates nothing.
TEST(GemmAllocation, PoolJobsAllocateNothing) {
  std::atomic<long> sum{0};
  for (const int threads : {1, 2}) {
    EXPECT_EQ(news_after_warmup([&] {
                ThreadPool::instance().run(threads, [&](int tid, int) { sum += tid + 1; });
                ThreadPool::instance().run_tasks(threads, 17, [&](std::int64_t i) { sum += i; });
              }),
              0);
  }
  EXPECT_GT(sum.load(), 0);
}

}  // namespace
}  // namespace attain::gemm
