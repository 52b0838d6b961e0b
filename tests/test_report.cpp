// Report page (well-formed, self-contained, one point per ok op), CSV import, projections,
// attain cluster files (recognised by content, timeline and goodput-vs-scale charts).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "attain/cluster.hpp"
#include "attain/report.hpp"

using namespace attain;

namespace {

// A device built here, so the arithmetic below does not depend on the database's numbers.
DeviceSpec test_device() {
  DeviceSpec d;
  d.id = "testchip";
  d.name = "Test Chip";
  d.kind = "npu";
  d.peak_tflops = {{"bf16", 1000}, {"fp8", 2000}};
  d.mem_bandwidth_gbps = 4000;
  return d;
}

Result ok_result(const std::string& spec, const std::string& backend, double seconds,
                 double attainable, const std::string& phase = "decode",
                 const std::string& model = "m1") {
  Result r;
  r.op.op = Op::parse(spec);
  r.op.prov = {model, "layer0.q", phase, 1, 0, 2};
  r.backend = backend;
  r.flops = r.op.op.flops(), r.bytes = r.op.op.bytes();
  r.median_s = r.min_s = seconds;
  r.tflops = r.flops / seconds / 1e12;
  r.gbps = r.bytes / seconds / 1e9;
  r.attainable_tflops = attainable;
  r.efficiency = r.tflops / attainable;
  r.verified = true;
  return r;
}

ResultsFile host_file() {
  ResultsFile f;
  f.created = "2026-11-30T00:00:00Z";
  f.command = "attain bench --suite quick";
  f.machine.device = "host";
  f.machine.threads = 2;
  f.machine.roofline.peak_tflops = 0.189, f.machine.roofline.bw_gbps = 17.7,
  f.machine.roofline.source = "probe (2 threads)";
  const char* specs[] = {"gemm:m=8,n=512,k=512,dtype=fp32", "gemm:m=256,n=256,k=256,dtype=bf16",
                         "grouped_gemm:groups=4,m=16,n=128,k=256,dtype=bf16",
                         "mla_decode:b=2,s=256,h=16,dtype=bf16"};
  double t = 1e-4;
  for (const char* s : specs) {
    const Op op = Op::parse(s);
    const double att = f.machine.roofline.attainable_tflops(op);
    f.results.push_back(ok_result(s, "attain", t, att));
    f.results.push_back(ok_result(s, "openblas", t * 1.5, att, "prefill", "m2"));
    t *= 2;
  }
  Result u;
  u.op.op = Op::parse("gemm:m=4,n=64,k=64,dtype=fp8");
  u.backend = "openblas";
  u.status = "unsupported";
  u.reason = "fp8 not supported";
  f.results.push_back(u);
  Result w = u;
  w.backend = "attain";
  w.status = "wrong";
  w.reason = "max error <0.5> & more";
  f.results.push_back(w);
  return f;
}

// Balanced tags: every element closed in order; void elements and self-closing tags allowed.
std::string check_balanced(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta",  "br",   "hr",  "img",
                                              "input", "link", "col", "wbr"};
  std::vector<std::string> stack;
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    const auto end = html.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    const std::string tag = html.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '!') continue;  // doctype
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes " +
               (stack.empty() ? std::string("nothing") : "<" + stack.back() + ">");
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
    if (tag.back() == '/' || kVoid.count(name)) continue;
    if (name == "style") {  // raw text: skip to its end tag
      const auto close = html.find("</style>", i);
      if (close == std::string::npos) return "unclosed <style>";
      i = close + 8;
      continue;
    }
    stack.push_back(name);
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

std::vector<std::string> roofline_svgs(const std::string& html) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while ((i = html.find("<svg class=\"chart roofline\"", i)) != std::string::npos) {
    const auto end = html.find("</svg>", i);
    out.push_back(html.substr(i, end - i));
    i = end;
  }
  return out;
}

std::size_t count_points(const std::string& svg) {
  std::size_t n = 0;  // class="pt" or class="pt proj"
  for (std::size_t i = 0; (i = svg.find("class=\"pt", i)) != std::string::npos; i += 9)
    n += svg[i + 9] == '"' || svg[i + 9] == ' ';
  return n;
}

}  // namespace

TEST(Report, WellFormedSelfContainedOnePointPerOkOp) {
  ResultsFile proj = project_ops(suite("quick"), test_device(), efficiency_uniform(0.6));
  proj.machine.device = "testchip";
  std::size_t proj_ok = 0;
  for (const auto& r : proj.results) proj_ok += r.status == "ok";
  ASSERT_GT(proj_ok, 10u);
  ResultsFile host = host_file();
  host.machine.checks = {{"end", "2026-11-30T00:01:00Z", 2, 410.0, 0, 45.25, "plain", 0}};
  const ReportModel m = build_report_model({{"host", host}, {"proj", proj}});
  const std::string html = render_report_html(m, {"t & <title>", "2026-11-30T00:00:00Z", 10});
  EXPECT_EQ(check_balanced(html), "");
  // The ceilings measured during the run, beside those the efficiencies used.
  EXPECT_NE(html.find("at the end of the run: compute 410.0 GFLOP/s, memory 45.2 GB/s"),
            std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("t &amp; &lt;title&gt;"), std::string::npos);
  EXPECT_NE(html.find("max error &lt;0.5&gt; &amp; more"), std::string::npos)
      << "reasons are escaped";
  const auto svgs = roofline_svgs(html);
  ASSERT_EQ(svgs.size(), 2u);
  EXPECT_EQ(count_points(svgs[0]), 8u)
      << "4 ops x 2 backends ran ok; unsupported/wrong are not points";
  EXPECT_EQ(count_points(svgs[1]), proj_ok);
  // Hover text: spec, backend, efficiency.
  EXPECT_NE(svgs[0].find("<title>gemm:m=8,n=512,k=512,dtype=fp32\nbackend openblas"),
            std::string::npos);
  // Projections are marked: hollow points, banner, labels.
  EXPECT_EQ(svgs[0].find("pt proj"), std::string::npos);
  EXPECT_NE(svgs[1].find("class=\"pt proj\""), std::string::npos);
  EXPECT_NE(html.find("This report contains PROJECTIONS"), std::string::npos);
  EXPECT_NE(html.find("proj:projected:testchip"), std::string::npos);
  // Reproduce commands for the furthest ops of the host file.
  EXPECT_NE(
      html.find("attain bench --op gemm:m=8,n=512,k=512,dtype=fp32 --backend attain --threads 2"),
      std::string::npos);
  // Pairs of three series: host:attain, host:openblas, proj:projected:testchip.
  ASSERT_EQ(m.series.size(), 3u);
  ASSERT_EQ(m.pairs.size(), 3u);
  EXPECT_TRUE(m.pairs[1].projected);
  EXPECT_FALSE(m.pairs[0].projected);
}

TEST(Report, NoUrlEvenFromUserText) {
  ResultsFile f = host_file();
  f.command = "attain bench see https://example.org and http://x";
  const ReportModel m = build_report_model({{"a", f}});
  const std::string html = render_report_html(m, {});
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(check_balanced(html), "");
}

TEST(Report, EmptyAndCeilinglessFilesRender) {
  ResultsFile empty;  // no results, no ceilings
  ResultsFile only_bad = host_file();
  for (auto& r : only_bad.results) r.status = "error", r.reason = "failed";
  const ReportModel m = build_report_model({{"empty", empty}, {"bad", only_bad}});
  const std::string html = render_report_html(m, {});
  EXPECT_EQ(check_balanced(html), "");
  const auto svgs = roofline_svgs(html);
  ASSERT_EQ(svgs.size(), 2u);
  EXPECT_EQ(count_points(svgs[0]) + count_points(svgs[1]), 0u);
  EXPECT_NE(svgs[0].find("no ceilings recorded"), std::string::npos);
  EXPECT_NE(html.find("no op ran successfully"), std::string::npos);
}

TEST(Report, PairRatiosGeomeanQuartilesWins) {
  ResultsFile a, b;
  const char* specs[] = {"gemm:m=1,n=64,k=64,dtype=fp32", "gemm:m=2,n=64,k=64,dtype=fp32",
                         "gemm:m=3,n=64,k=64,dtype=fp32", "gemm:m=4,n=64,k=64,dtype=fp32"};
  const double ta[] = {1, 2, 4, 1}, tb[] = {2, 2, 2, 8};
  for (int i = 0; i < 3; ++i) {
    a.results.push_back(ok_result(specs[i], "x", ta[i], 1));
    b.results.push_back(ok_result(specs[i], "x", tb[i], 1));
  }
  a.results.push_back(ok_result(specs[3], "x", ta[3], 1));  // only in a: not compared
  const ReportModel m = build_report_model({{"A", a}, {"B", b}});
  ASSERT_EQ(m.series.size(), 2u);
  EXPECT_EQ(m.series[0].name, "A:x");
  ASSERT_EQ(m.pairs.size(), 1u);
  const ReportPair& p = m.pairs[0];
  // time_b / time_a = 2, 1, 0.5: geomean 1, one win each, one tie.
  EXPECT_EQ(p.ratio.count, 3u);
  EXPECT_NEAR(p.ratio.geomean, 1.0, 1e-12);
  EXPECT_NEAR(p.ratio.q1, 0.75, 1e-12);
  EXPECT_NEAR(p.ratio.q3, 1.5, 1e-12);
  EXPECT_EQ(p.wins_a, 1u);
  EXPECT_EQ(p.wins_b, 1u);
  EXPECT_EQ(p.ties, 1u);
  const auto j = report_summary_json(m);
  EXPECT_EQ(j["pairs"][0]["a"], "A:x");
  EXPECT_EQ(j["series"][0]["points"], 4);
}

TEST(Import, ColumnsAnyOrderTimesAndTflops) {
  const DeviceSpec d = test_device();
  const std::string csv =
      "# measured elsewhere\n"
      "Model,tflops,dtype,K,n,m,time_us,layer,notes\n"
      "dsv3,,bf16,4096,4096,4096,274.877906944,mlp.up,z\n"
      "\n"
      "dsv3,1.5,bf16,4096,4096,1,,attn.q,z\n"
      "\"q,uoted\",,fp8,128,256,4,2.0,x,z\n";
  const ImportOutcome o = import_csv(csv, d, {"amd", "t.csv"});
  EXPECT_TRUE(o.skipped.empty()) << o.skipped[0].message;
  ASSERT_EQ(o.file.results.size(), 3u);
  EXPECT_EQ(o.ignored_columns, std::vector<std::string>{"notes"});
  EXPECT_EQ(o.file.machine.device, "testchip");
  EXPECT_DOUBLE_EQ(o.file.machine.roofline.peak_tflops, 1000);
  // Row 1: 2*4096^3 FLOPs in 274.877906944 us = 500 TFLOP/s; compute-bound -> attainable 1000.
  const Result& r = o.file.results[0];
  EXPECT_EQ(r.backend, "amd");
  EXPECT_EQ(r.op.prov.model, "dsv3");
  EXPECT_EQ(r.op.prov.layer, "mlp.up");
  EXPECT_NEAR(r.tflops, 500, 1e-6);
  EXPECT_NEAR(r.attainable_tflops, 1000, 1e-9);
  EXPECT_NEAR(r.efficiency, 0.5, 1e-9);
  EXPECT_FALSE(r.verified);
  EXPECT_FALSE(r.projected);
  // Row 2 (line 5): from tflops; memory-bound: attainable = flops/bytes x 4000 GB/s.
  const Result& r2 = o.file.results[1];
  const double flops = 2.0 * 4096 * 4096, bytes = (4096.0 + 4096.0 * 4096 + 4096) * 2;
  EXPECT_NEAR(r2.median_s, flops / 1.5e12, 1e-15);
  EXPECT_NEAR(r2.attainable_tflops, flops / bytes * 4000 / 1e3, 1e-9);
  EXPECT_EQ(o.file.results[2].op.prov.model, "q,uoted");
  EXPECT_EQ(o.file.results[2].op.op.dtype, DType::fp8);
}

TEST(Import, MalformedRowsReportedWithLineNumbers) {
  const DeviceSpec d = test_device();
  const std::string csv =
      "m,n,k,dtype,time_us\n"       // line 1
      "8,4096,7168,bf16,20\n"       // 2 ok
      "x,4096,7168,bf16,20\n"       // 3 bad m
      "8,4096,7168,bf16\n"          // 4 too few fields
      "8,4096,7168,fp32,20\n"       // 5 device lists no fp32
      "8,4096,7168,int4,20\n"       // 6 unknown dtype
      "8,4096,7168,bf16,-3\n"       // 7 negative time
      "8,4096,7168,bf16,\n"         // 8 no time
      "16,4096,7168,bf16,0.001\n";  // 9 ok but above the roofline: warning
  const ImportOutcome o = import_csv(csv, d, {"imported", "bad.csv"});
  ASSERT_EQ(o.file.results.size(), 2u);
  ASSERT_EQ(o.skipped.size(), 6u);
  const std::size_t lines[] = {3, 4, 5, 6, 7, 8};
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_EQ(o.skipped[i].line, lines[i]) << o.skipped[i].message;
  EXPECT_NE(o.skipped[0].message.find("m 'x'"), std::string::npos);
  EXPECT_NE(o.skipped[1].message.find("4 fields"), std::string::npos);
  EXPECT_NE(o.skipped[2].message.find("fp32"), std::string::npos);
  EXPECT_NE(o.skipped[3].message.find("int4"), std::string::npos);
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_EQ(o.warnings[0].line, 9u);
}

namespace {

// The error importing `csv` against the test device gives ("no error" when it imports).
std::string import_error(const std::string& csv) {
  try {
    import_csv(csv, test_device(), {"imported", "f.csv"});
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return "no error";
}

}  // namespace

TEST(Import, ClearErrors) {
  const auto msg = import_error;
  EXPECT_NE(msg("").find("empty"), std::string::npos);
  EXPECT_NE(msg("\n# only a comment\n\n").find("empty"), std::string::npos);
  EXPECT_NE(msg("m,n,k,dtype,time_us\n").find("no data rows"), std::string::npos);
  EXPECT_NE(msg("m,n,dtype,time_us\n1,2,bf16,3\n").find("missing required column(s): k"),
            std::string::npos);
  EXPECT_NE(msg("m,n,k,dtype\n1,2,3,bf16\n").find("time_us or tflops"), std::string::npos);
  const std::string none = msg("m,n,k,dtype,tflops\na,2,3,bf16,4\n1,2,3,bf16,zz\n");
  EXPECT_NE(none.find("no row could be imported"), std::string::npos);
  EXPECT_NE(none.find("line 2"), std::string::npos);
  EXPECT_NE(none.find("line 3"), std::string::npos);
  EXPECT_NE(msg("m,n,k,dtype,time_us,tflops\n4096,4096,4096,bf16,274.877906944,900\n")
                .find("but tflops says 900"),
            std::string::npos);
}

TEST(Import, GroupedGemm) {
  const ImportOutcome o = import_csv(
      "kind,groups,m,n,k,dtype,time_us\ngrouped_gemm,8,32,4096,7168,fp8,100\ngrouped_gemm,,32,4096,"
      "7168,fp8,100\n",
      test_device(), {});
  ASSERT_EQ(o.file.results.size(), 1u);
  EXPECT_EQ(o.file.results[0].op.op.spec(),
            Op::parse("grouped_gemm:groups=8,m=32,n=4096,k=7168,dtype=fp8").spec());
  ASSERT_EQ(o.skipped.size(), 1u);
  EXPECT_EQ(o.skipped[0].line, 3u);
}

// What `attain catalog --csv` writes comes back as the same ops: every kind and spec field.
TEST(Import, BySpecEveryKind) {
  DeviceSpec d = test_device();
  d.peak_tflops["fp32"] = 100, d.peak_tflops["fp16"] = 1000;
  std::vector<CatalogOp> ops;
  for (const char* s :
       {"gemm:m=3,n=17,k=33,dtype=fp32", "batched_gemm:batch=2,m=4,n=8,k=16,dtype=fp16",
        "grouped_gemm:groups=4,m=5,n=17,k=33,dtype=bf16,skew=1.5,layout=masked",
        "grouped_gemm:groups=3,m=2,n=8,k=256,dtype=fp8",
        "mla_decode:b=2,s=300,h=16,dtype=fp8,s_q=2", "mla_decode:b=1,s=64,h=128,dtype=bf16"})
    ops.push_back({Op::parse(s), {"m1", "layer, with a comma", "decode", 4, 0, 2}});
  std::string csv = catalog_csv(ops);
  // Fill in the time_us column (the last field of each row).
  std::string filled;
  std::size_t line = 0, pos = 0;
  while (pos < csv.size()) {
    const std::size_t nl = csv.find('\n', pos);
    filled += csv.substr(pos, nl - pos) + (line++ ? "12.5" : "") + "\n";
    pos = nl + 1;
  }
  const ImportOutcome o = import_csv(filled, d, {"elsewhere", "c.csv"});
  ASSERT_TRUE(o.skipped.empty()) << o.skipped[0].message;
  ASSERT_EQ(o.file.results.size(), ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(o.file.results[i].op.op.spec(), ops[i].op.spec());
    EXPECT_EQ(o.file.results[i].op.prov.layer, "layer, with a comma");
    EXPECT_EQ(o.file.results[i].op.prov.count, 2);
    EXPECT_NEAR(o.file.results[i].median_s, 12.5e-6, 1e-18);
  }
  EXPECT_EQ(o.ignored_columns,
            (std::vector<std::string>{"flops", "bytes", "kind (the spec column gives the op)"}));
  // The shape columns name an MLA op too.
  const ImportOutcome m =
      import_csv("kind,b,s,h,s_q,dtype,time_us\nmla_decode,2,300,16,2,fp8,40\n", d, {});
  ASSERT_EQ(m.file.results.size(), 1u) << m.skipped[0].message;
  EXPECT_EQ(m.file.results[0].op.op.spec(),
            Op::parse("mla_decode:b=2,s=300,h=16,dtype=fp8,s_q=2").spec());
  const ImportOutcome g = import_csv(
      "kind,groups,m,n,k,layout,skew,dtype,time_us\ngrouped_gemm,4,5,17,33,masked,1.5,bf16,9\n", d,
      {});
  ASSERT_EQ(g.file.results.size(), 1u) << g.skipped[0].message;
  EXPECT_EQ(g.file.results[0].op.op.spec(), ops[2].op.spec());
}

TEST(Import, RefusesUnknownColumnsDuplicatesAndDisagreement) {
  const DeviceSpec d = test_device();
  const auto msg = import_error;
  const std::string unknown = msg("m,n,k,dtype,time_us,lyaer,extra\n1,2,3,bf16,4,x,y\n");
  EXPECT_NE(unknown.find("unknown column(s): lyaer, extra"), std::string::npos) << unknown;
  const std::string dup =
      msg("spec,time_us\n\"gemm:m=1,n=2,k=3,dtype=bf16\",4\n\"gemm:m=1,n=2,k=3,dtype=bf16\",5\n");
  EXPECT_NE(dup.find("line 3 repeats the op of line 2"), std::string::npos) << dup;
  EXPECT_NE(msg("time_us\n4\n").find("needed: spec, or m, n, k"), std::string::npos);
  EXPECT_NE(msg("b,s,dtype,time_us\n1,2,bf16,3\n").find("missing required column(s): h"),
            std::string::npos);
  // A row whose dtype column disagrees with its spec, a bad spec, a NaN time: skipped, said why.
  const ImportOutcome o = import_csv(
      "spec,dtype,time_us\n\"gemm:m=1,n=2,k=3,dtype=bf16\",fp8,4\n\"gemm:m=0,n=2,k=3,dtype=bf16\",,"
      "4\n"
      "\"gemm:m=2,n=2,k=3,dtype=bf16\",,nan\n\"gemm:m=3,n=2,k=3,dtype=bf16\",,2\n",
      d, {"imported", "f.csv"});
  ASSERT_EQ(o.skipped.size(), 3u);
  EXPECT_NE(o.skipped[0].message.find("differs from the spec"), std::string::npos);
  EXPECT_NE(o.skipped[2].message.find("time_us 'nan'"), std::string::npos) << o.skipped[2].message;
  EXPECT_EQ(o.file.results.size(), 1u);
}

TEST(Project, ArithmeticByHand) {
  std::vector<CatalogOp> ops = {
      {Op::parse("gemm:m=4096,n=4096,k=4096,dtype=bf16"), {"m", "l", "prefill", 4096, 0, 1}},
      {Op::parse("gemm:m=1,n=4096,k=4096,dtype=bf16"), {"m", "l", "decode", 1, 0, 1}},
      {Op::parse("gemm:m=1,n=64,k=64,dtype=fp32"), {"m", "l", "decode", 1, 0, 1}}};
  const ResultsFile f = project_ops(ops, test_device(), efficiency_uniform(0.5));
  ASSERT_EQ(f.results.size(), 3u);
  for (const auto& r : f.results) {
    EXPECT_TRUE(r.projected);
    EXPECT_EQ(r.backend, "projected:testchip");
  }
  // Compute-bound: 2*4096^3 FLOPs at 1000 TFLOP/s x 0.5 = 274.877906944 us.
  EXPECT_EQ(f.results[0].status, "ok");
  EXPECT_NEAR(f.results[0].median_s, 274.877906944e-6, 1e-15);
  EXPECT_NEAR(f.results[0].tflops, 500, 1e-9);
  // Memory-bound: time = bytes / (4000 GB/s x 0.5) = 33,570,816 B / 2e12 B/s.
  EXPECT_NEAR(f.results[1].median_s, 33570816.0 / 2e12, 1e-15);
  EXPECT_NEAR(f.results[1].efficiency, 0.5, 1e-12);
  // The device lists no fp32: recorded as unsupported, not dropped.
  EXPECT_EQ(f.results[2].status, "unsupported");
  EXPECT_NE(f.results[2].reason.find("fp32"), std::string::npos);
  EXPECT_EQ(f.machine.device, "testchip");
  // Round trip keeps the projection flag.
  const ResultsFile back = results_from_json(to_json(f), "mem");
  EXPECT_TRUE(back.results[0].projected);
}

TEST(Project, LikeTakesGeomeansByKindAndPhase) {
  ResultsFile measured;
  auto add = [&](const char* spec, const char* phase, double eff) {
    Result r = ok_result(spec, "attain", 1e-3, 1, phase);
    r.efficiency = eff;
    measured.results.push_back(r);
  };
  add("gemm:m=1,n=64,k=64,dtype=bf16", "decode", 0.2);
  add("gemm:m=2,n=64,k=64,dtype=bf16", "decode", 0.8);  // gemm decode geomean 0.4
  add("gemm:m=512,n=64,k=64,dtype=bf16", "prefill", 0.9);
  add("grouped_gemm:groups=2,m=4,n=64,k=64,dtype=bf16", "prefill", 0.5);
  const EfficiencyModel e = efficiency_like(measured, "", "x.json");
  std::string basis;
  EXPECT_NEAR(
      e.for_op({Op::parse("gemm:m=3,n=64,k=64,dtype=bf16"), {"", "", "decode", 1, 0, 1}}, &basis),
      0.4, 1e-12);
  EXPECT_EQ(basis, "kind=gemm,phase=decode");
  // No grouped decode measured: falls back to the kind's geomean.
  EXPECT_NEAR(e.for_op({Op::parse("grouped_gemm:groups=2,m=1,n=64,k=64,dtype=bf16"),
                        {"", "", "decode", 1, 0, 1}},
                       &basis),
              0.5, 1e-12);
  EXPECT_EQ(basis, "kind=grouped_gemm");
  // No mla at all: the phase.
  EXPECT_NEAR(
      e.for_op({Op::parse("mla_decode:b=1,s=64,h=16,dtype=bf16"), {"", "", "decode", 1, 0, 1}},
               &basis),
      0.4, 1e-12);
  EXPECT_EQ(basis, "phase=decode");
  // Projections cannot serve as the measured basis; bad figures are refused.
  measured.results[0].projected = true;
  EXPECT_THROW(efficiency_like(measured, "", "x.json"), InputError);
  EXPECT_THROW(efficiency_like(measured, "nope", "x.json"), InputError);
  EXPECT_THROW(efficiency_uniform(0), InputError);
  EXPECT_THROW(efficiency_uniform(1.5), InputError);
  EXPECT_NO_THROW(efficiency_uniform(1.0));
}

// ---- attain cluster files ----------------------------------------------------------------

namespace {

using nlohmann::json;

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t i = 0; (i = s.find(what, i)) != std::string::npos; i += what.size()) ++n;
  return n;
}

// The <svg class="chart NAME" ...> ... </svg> elements of a page.
std::vector<std::string> charts(const std::string& html, const std::string& name) {
  std::vector<std::string> out;
  const std::string open = "<svg class=\"chart " + name + "\"";
  for (std::size_t i = 0; (i = html.find(open, i)) != std::string::npos;) {
    const auto end = html.find("</svg>", i);
    out.push_back(html.substr(i, end - i));
    i = end;
  }
  return out;
}

// A run as attain cluster writes it (the fields the report reads), 24 hours, checkpoints every
// minute with a 60 s pause (the job computes half of the time it is up), and three
// interruptions whose kept work is worked out by hand below.
json run_doc() {
  return json::parse(R"({
    "schema": "attain.cluster/1", "command": "attain cluster --days 1 --json --out r.json",
    "created": "2026-11-30T00:00:00Z",
    "inputs": {"model": "m", "device": "chip", "chips": 2048, "days": 1, "runs": 3, "seed": 1,
               "failures": "t"},
    "step": {"step_s": 5},
    "interruptions": {"unexpected": 2, "planned": 1, "by_cause": {"GPU": 1.5, "Bug": 0.5},
                      "unexpected_stats": {"mean": 2, "ci95": [1, 3], "n": 3},
                      "by_cause_stats": {"GPU": {"mean": 1.5, "ci95": [0.5, 2.5], "n": 3}}},
    "published": {"chips": 16384, "days": 54, "unexpected": 419, "planned": 47,
                  "by_cause": {"GPU": 148}},
    "ettr": 0.4, "goodput": 0.2, "mfu": 0.5, "mtbf_h": 12,
    "checkpoint": {"mode": "sync", "interval_min": 1, "daly_min": 1, "young_min": 1.1,
                   "pause_s": 60},
    "stats": {"ettr": {"mean": 0.4, "ci95": [0.35, 0.45], "n": 3},
              "goodput": {"mean": 0.2, "ci95": [0.15, 0.25], "n": 3}},
    "timeline": [
      {"t_h": 4, "kind": "unexpected", "cause": "GPU", "lost_work_min": 30, "down_min": 60},
      {"t_h": 10, "kind": "planned", "cause": "planned", "lost_work_min": 0, "down_min": 120},
      {"t_h": 10.5, "kind": "unexpected", "cause": "Bug", "lost_work_min": 0, "down_min": 120,
       "spare_used": true}]})");
}

json sweep_doc(bool with_ci) {
  json j = {{"schema", "attain.cluster-sweep/1"},
            {"command", "attain cluster --sweep 1000,10000,100000"},
            {"inputs", {{"model", "m"}, {"device", "chip"}, {"days", 3}, {"runs", 2}}},
            {"variants",
             {{{"name", "fixed"}, {"what", "sync, fixed"}}, {{"name", "daly"}, {"what", "Daly"}}}}};
  json points = json::array();
  for (double chips : {1000.0, 10000.0, 100000.0}) {
    json v = json::object();
    for (const char* name : {"fixed", "daly"}) {
      const double g = 0.6 - chips / 1e6, e = 0.95 - chips / 5e5;
      v[name] = {{"ettr", e}, {"goodput", g}, {"interval_min", 30}};
      if (with_ci)
        v[name]["goodput_ci95"] = {g - 0.02, g + 0.02}, v[name]["ettr_ci95"] = {e - 0.01, e + 0.01};
    }
    points.push_back({{"chips", chips}, {"mtbf_h", 1e4 / chips}, {"mfu", 0.62}, {"variants", v}});
  }
  j["points"] = points;
  return j;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(ReportCluster, RecognisedBySchemaOrUnambiguousFields) {
  EXPECT_EQ(report_file_kind(run_doc(), "r"), ReportFileKind::cluster_run);
  EXPECT_EQ(report_file_kind(sweep_doc(false), "s"), ReportFileKind::cluster_sweep);
  EXPECT_EQ(report_file_kind(to_json(host_file()), "h"), ReportFileKind::results);
  json run = run_doc(), sweep = sweep_doc(false);
  run.erase("schema"), sweep.erase("schema");
  EXPECT_EQ(report_file_kind(run, "r"), ReportFileKind::cluster_run);
  EXPECT_EQ(report_file_kind(sweep, "s"), ReportFileKind::cluster_sweep);
  auto error = [](const json& j) {
    try {
      report_file_kind(j, "x.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(json{{"foo", 1}}).find("x.json: neither a results file"), std::string::npos);
  EXPECT_NE(error(json{{"schema", "other/2"}}).find("schema 'other/2' is not one"),
            std::string::npos);
  json both = run;
  both["points"] = json::array(), both["variants"] = json::array();
  EXPECT_NE(error(both).find("more than one kind"), std::string::npos);
  EXPECT_NE(error(json::array()).find("not an object"), std::string::npos);
}

TEST(ReportCluster, ReadReportFileSortsAndRejects) {
  ReportFiles f;
  read_report_file(write_temp("rc_run.json", run_doc().dump()), "run", f);
  read_report_file(write_temp("rc_sweep.json", sweep_doc(true).dump()), "sweep", f);
  read_report_file(write_temp("rc_res.json", to_json(host_file()).dump()), "res", f);
  EXPECT_EQ(f.runs.size(), 1u);
  EXPECT_EQ(f.sweeps.size(), 1u);
  EXPECT_EQ(f.results.size(), 1u);
  EXPECT_THROW(read_report_file(write_temp("rc_other.json", R"({"name": "x"})"), "o", f),
               InputError);
  EXPECT_THROW(read_report_file(write_temp("rc_bad.json", "{not json"), "b", f), InputError);
  EXPECT_THROW(read_report_file(::testing::TempDir() + "rc_missing.json", "m", f), InputError);
  json sw = sweep_doc(false);
  sw["points"][1]["variants"].erase("daly");
  try {
    read_report_file(write_temp("rc_sw2.json", sw.dump()), "s", f);
    ADD_FAILURE() << "a sweep point without a variant's figures was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("points[1]: no figures for variant 'daly'"),
              std::string::npos)
        << e.what();
  }
  json run = run_doc();
  run["timeline"][0]["kind"] = "sometimes";
  EXPECT_THROW(cluster_run_from_json(run, "r"), InputError);
}

TEST(ReportCluster, KeptWorkByHand) {
  const ClusterRun r = cluster_run_from_json(run_doc(), "r");
  ASSERT_EQ(r.timeline.size(), 3u);
  EXPECT_EQ(cluster_end_h(r), 24);
  // Half of the up time computes: [0, 4] h -> 2, minus 0.5 lost -> 1.5; down [4, 5];
  // [5, 10] -> 4.0; down [10, 12.5] (the failure at 10.5 extends the planned stop's 12);
  // [12.5, 24] -> 9.75.
  const auto p = cluster_progress(r);
  EXPECT_NEAR(p.back().first, 24, 1e-12);
  EXPECT_NEAR(p.back().second, 9.75, 1e-12);
  auto at = [&](double t) {  // the last point at wall time t
    double y = -1;
    for (const auto& [x, v] : p)
      if (std::abs(x - t) < 1e-12) y = v;
    return y;
  };
  EXPECT_NEAR(at(4), 1.5, 1e-12);
  EXPECT_NEAR(at(5), 1.5, 1e-12);
  EXPECT_NEAR(at(10), 4.0, 1e-12);
  EXPECT_NEAR(at(12.5), 4.0, 1e-12);
}

TEST(ReportCluster, PageWithTimelineAndSweepCharts) {
  ReportFiles f;
  f.runs.push_back({"run", cluster_run_from_json(run_doc(), "r")});
  f.sweeps.push_back({"sweep", cluster_sweep_from_json(sweep_doc(true), "s")});
  json no_ci = sweep_doc(false);
  no_ci.erase("command");
  f.sweeps.push_back({"sweep2", cluster_sweep_from_json(no_ci, "s2")});
  const ReportModel m = build_report_model(std::move(f));
  const std::string html = render_report_html(m, {"cluster <page>", "", 10});
  EXPECT_EQ(check_balanced(html), "");
  EXPECT_EQ(html.find("://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_TRUE(charts(html, "roofline").empty()) << "no results file, no results sections";
  EXPECT_EQ(html.find("<h2>Headline"), std::string::npos);

  const auto tl = charts(html, "timeline");
  ASSERT_EQ(tl.size(), 1u);
  EXPECT_EQ(count_of(tl[0], "class=\"ev unexpected\""), 2u);
  EXPECT_EQ(count_of(tl[0], "class=\"ev planned\""), 1u);
  EXPECT_EQ(count_of(tl[0], "class=\"lost\""), 1u);
  EXPECT_EQ(count_of(tl[0], "class=\"down\""), 2u) << "the overlapping recoveries merge";
  EXPECT_NE(tl[0].find("class=\"progress\""), std::string::npos);
  EXPECT_NE(tl[0].find("Interruptions of run 0 of 3"), std::string::npos);  // title
  EXPECT_NE(tl[0].find("wall clock (days since the start)"), std::string::npos);
  EXPECT_NE(tl[0].find(">GPU (1)</text>"), std::string::npos);  // legend by cause
  EXPECT_NE(tl[0].find(">Bug (1)</text>"), std::string::npos);
  EXPECT_NE(tl[0].find(">planned (1)</text>"), std::string::npos);
  EXPECT_NE(tl[0].find("hot spare used"), std::string::npos);
  // Caption with the command; tables with the confidence intervals.
  EXPECT_NE(html.find("Data: <code>attain cluster --days 1 --json --out r.json</code>"),
            std::string::npos);
  EXPECT_NE(html.find("2.0 <span class=\"note\">[1.0 .. 3.0]</span>"), std::string::npos);
  EXPECT_NE(html.find("40.0% <span class=\"note\">[35.0% .. 45.0%]</span>"), std::string::npos);
  EXPECT_NE(html.find("published (16,384 chips, 54 days)"), std::string::npos);

  const auto sw = charts(html, "sweep");
  ASSERT_EQ(sw.size(), 2u);
  for (const auto& c : sw) {
    EXPECT_EQ(count_of(c, "class=\"gp\""), 6u) << "3 points x 2 variants";
    EXPECT_EQ(count_of(c, "class=\"et\""), 6u);
    EXPECT_EQ(count_of(c, "class=\"gline\""), 2u);
    EXPECT_NE(c.find("chips (log scale)"), std::string::npos);
    EXPECT_NE(c.find(">1,000</text>"), std::string::npos);
    EXPECT_NE(c.find(">100,000</text>"), std::string::npos);
    EXPECT_NE(c.find(">fixed</text>"), std::string::npos);
  }
  EXPECT_EQ(count_of(sw[0], "class=\"band\""), 2u);
  EXPECT_EQ(count_of(sw[1], "class=\"band\""), 0u) << "no intervals, no bands";
  EXPECT_NE(html.find("<code>attain cluster --sweep 1000,10000,100000</code>"), std::string::npos);
  EXPECT_NE(html.find("does not record the command"), std::string::npos);
  // Goodput falls as chips grow: the 100,000-chip marker sits lowest (largest y).
  const auto gy = [&](const std::string& c, std::size_t k) {
    std::size_t i = 0;
    for (std::size_t n = 0; n <= k; ++n) i = c.find("class=\"gp\"", i + 1);
    const auto cy = c.rfind("cy=\"", i);
    return std::stod(c.substr(cy + 4));
  };
  EXPECT_LT(gy(sw[0], 0), gy(sw[0], 2));
}

TEST(ReportCluster, MixedWithResultsFiles) {
  ReportFiles f;
  f.results.push_back({"host", host_file()});
  f.runs.push_back({"run", cluster_run_from_json(run_doc(), "r")});
  f.sweeps.push_back({"sweep", cluster_sweep_from_json(sweep_doc(true), "s")});
  const ReportModel m = build_report_model(std::move(f));
  const std::string html = render_report_html(m, {});
  EXPECT_EQ(check_balanced(html), "");
  const auto roof = roofline_svgs(html);
  ASSERT_EQ(roof.size(), 1u);
  EXPECT_EQ(count_points(roof[0]), 8u);
  EXPECT_EQ(charts(html, "timeline").size(), 1u);
  EXPECT_EQ(charts(html, "sweep").size(), 1u);
  EXPECT_NE(html.find("1 results file, 1 cluster run file, 1 cluster sweep file"),
            std::string::npos);
  const json j = report_summary_json(m);
  EXPECT_EQ(j["series"].size(), 2u);
  EXPECT_EQ(j["cluster_runs"][0]["timeline_events"], 3);
  EXPECT_NEAR(j["cluster_runs"][0]["kept_compute_h"].get<double>(), 9.75, 1e-12);
  EXPECT_EQ(j["cluster_sweeps"][0]["chips"].size(), 3u);
}

// The kept-work line rebuilt from a simulated timeline ends where the simulation's own
// accounting does.
TEST(ReportCluster, RebuiltLineMatchesTheSimulation) {
  cluster::SimConfig c;
  c.chips = 2048, c.step_s = 5, c.tokens_per_step = 1e6, c.model_flops_per_step = 1e18;
  c.peak_flops_per_chip = 1e15, c.days = 3, c.state_bytes = 1e12, c.timeline = true;
  c.failures.name = "test";
  c.failures.causes.push_back({"GPU", "GPU", cluster::Scope::chip, 1e-4, -1, true, -1, ""});
  c.failures.causes.push_back({"Bug", "SW", cluster::Scope::job, 0.05, -1, false, -1, ""});
  c.failures.planned_per_day = 2;
  const cluster::CheckpointPlan plan = cluster::plan_checkpoints(c);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const cluster::RunResult rr = cluster::simulate(c, seed);
    ASSERT_GT(rr.timeline.size(), 5u);
    json j = {{"schema", "attain.cluster/1"},
              {"inputs", {{"days", 3}, {"chips", 2048}, {"runs", 1}}},
              {"interruptions",
               {{"unexpected", rr.unexpected}, {"planned", rr.planned}, {"by_cause", rr.by_cause}}},
              {"ettr", rr.ettr},
              {"goodput", rr.goodput},
              {"mfu", 0.5},
              {"checkpoint", {{"interval_min", plan.interval_min}, {"pause_s", plan.pause_s}}},
              {"timeline_run", {{"run", 0}, {"wall_h", rr.wall_h}, {"useful_h", rr.useful_h}}}};
    json tl = json::array();
    for (const auto& e : rr.timeline)
      tl.push_back({{"t_h", e.t_h},
                    {"kind", e.planned ? "planned" : "unexpected"},
                    {"cause", e.cause},
                    {"lost_work_min", e.lost_work_min},
                    {"down_min", e.down_min}});
    j["timeline"] = tl;
    const ClusterRun r = cluster_run_from_json(j, "sim");
    const auto p = cluster_progress(r);
    EXPECT_NEAR(p.back().first, rr.wall_h, 1e-9);
    // Partial checkpoint cycles at each restart make the rebuilt line differ by a few pauses.
    EXPECT_NEAR(p.back().second, rr.useful_h, 0.002 * rr.useful_h) << "seed " << seed;
    const std::string svg_page =
        render_report_html(build_report_model(ReportFiles{{}, {{"sim", r}}, {}}), {});
    EXPECT_EQ(count_of(svg_page, "class=\"ev "), rr.timeline.size());
  }
}
