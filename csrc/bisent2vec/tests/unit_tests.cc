// Unit tests of the trainer's parts, with plain checks (no test framework). Run by CTest:
//   bisent2vec_tests SCRATCH_DIR
// Every expected number below is worked out by hand (or by a separate calculation shown in
// the comment), never by the code under test.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "args.h"
#include "dictionary.h"
#include "model.h"
#include "model_io.h"
#include "trainer.h"

using namespace bisent2vec;

namespace {

int failures = 0;
int checks = 0;
std::string scratch = "test-files";

#define CHECK(cond)                                                              \
  do {                                                                           \
    ++checks;                                                                    \
    if (!(cond)) {                                                               \
      ++failures;                                                                \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                            \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                           \
  do {                                                                                  \
    ++checks;                                                                           \
    const double va = (a), vb = (b);                                                    \
    if (!(std::fabs(va - vb) <= (tol))) {                                               \
      ++failures;                                                                       \
      std::fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g\n", __FILE__, __LINE__, #a, va, \
                   vb);                                                                 \
    }                                                                                   \
  } while (0)

// Runs f, which must throw InputError whose message contains `needle`.
void check_throws(const std::function<void()>& f, const std::string& needle, int line) {
  ++checks;
  try {
    f();
  } catch (const InputError& e) {
    if (std::string(e.what()).find(needle) == std::string::npos) {
      ++failures;
      std::fprintf(stderr, "line %d: error '%s' lacks '%s'\n", line, e.what(), needle.c_str());
    }
    return;
  }
  ++failures;
  std::fprintf(stderr, "line %d: no InputError (expected one mentioning '%s')\n", line,
               needle.c_str());
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = scratch + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::string kLangs[2] = {"en", "de"};

void test_vocabulary() {
  // en: the x4, cat x2, sat x1; de: die x2, katze x2, the x2 (a German "the", not English).
  const std::string path = write_file("vocab.txt",
                                      "the cat sat\tdie katze\n"
                                      "the the\tthe  katze\n"
                                      "the cat\tdie the\n");
  CorpusInfo info;
  Vocabulary v = build_vocabulary(path, kLangs, 2, 0, &info);
  CHECK(info.lines == 3);
  CHECK(info.tokens[0] == 7 && info.tokens[1] == 6);
  CHECK(info.distinct[0] == 3 && info.distinct[1] == 3);
  // Kept: count >= 2, sorted by count, then language, then text.
  CHECK(v.size() == 5);
  CHECK(v.word(0).text == "the" && v.word(0).lang == 0 && v.word(0).count == 4);
  CHECK(v.word(1).text == "cat" && v.word(1).lang == 0);
  CHECK(v.word(2).text == "die" && v.word(2).lang == 1);
  CHECK(v.word(3).text == "katze" && v.word(3).lang == 1);
  CHECK(v.word(4).text == "the" && v.word(4).lang == 1 && v.word(4).count == 2);
  CHECK(v.find(0, "the") == 0 && v.find(1, "the") == 4);
  CHECK(v.find(0, "sat") == -1 && v.find(0, "katze") == -1);
  CHECK(v.ntokens() == 12);
  CHECK(v.size_of(0) == 2 && v.size_of(1) == 3);

  Vocabulary top = build_vocabulary(path, kLangs, 1, 3, nullptr);
  CHECK(top.size() == 3 && top.word(0).text == "the" && top.word(1).text == "cat" &&
        top.word(2).text == "die");

  // Many words: the table grows and every word is still found under its own id.
  Vocabulary big;
  for (int i = 0; i < 5000; ++i) big.add(static_cast<uint8_t>(i % 2), "w" + std::to_string(i), i + 1);
  big.prune(1, 0);
  CHECK(big.size() == 5000);
  CHECK(big.word(0).text == "w4999");
  bool all_found = true;
  for (int32_t id = 0; id < big.size(); ++id) {
    all_found = all_found && big.find(big.word(id).lang, big.word(id).text) == id;
  }
  CHECK(all_found);
}

void test_vocabulary_threads() {
  // Counted by 1 to 7 threads over byte ranges (lines cut anywhere, ranges without a line
  // start): the same words, ids, counts and corpus figures.
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += "w" + std::to_string(i % 17) + " the x" + std::to_string(i % 5) + "\t";
    text += "die v" + std::to_string(i % 11) + (i % 3 ? " katze" : "") + "\n";
  }
  const std::string path = write_file("threads.txt", text + "last\tline");  // no final '\n'
  CorpusInfo one;
  const Vocabulary v1 = build_vocabulary(path, kLangs, 2, 0, &one, 1);
  CHECK(one.lines == 301 && v1.size() == 2 + 17 + 5 + 11 + 1);
  for (int threads = 2; threads <= 7; ++threads) {
    CorpusInfo info;
    const Vocabulary v = build_vocabulary(path, kLangs, 2, 0, &info, threads);
    bool same = v.size() == v1.size();
    for (int32_t id = 0; same && id < v.size(); ++id) {
      same = v.word(id).text == v1.word(id).text && v.word(id).lang == v1.word(id).lang &&
             v.word(id).count == v1.word(id).count;
    }
    CHECK(same);
    CHECK(info.lines == one.lines && info.tokens[0] == one.tokens[0] &&
          info.tokens[1] == one.tokens[1] && info.distinct[0] == one.distinct[0] &&
          info.distinct[1] == one.distinct[1]);
  }
  // A malformed line is named by its number in the file, whichever thread read it.
  const std::string bad = write_file("bad-late.txt", text + "no tab here\n" + text);
  for (int threads = 1; threads <= 4; ++threads) {
    check_throws([&] { build_vocabulary(bad, kLangs, 1, 0, nullptr, threads); },
                 bad + ":301: expected one tab", __LINE__);
  }
}

void test_input_errors() {
  const std::string bad = write_file("bad.txt", "a b\tc d\nno tab here\ne\tf\n");
  check_throws([&] { build_vocabulary(bad, kLangs, 1, 0, nullptr); }, bad + ":2: expected one tab",
               __LINE__);
  const std::string two = write_file("two.txt", "a\tb\tc\n");
  check_throws([&] { build_vocabulary(two, kLangs, 1, 0, nullptr); }, "found 2", __LINE__);
  check_throws([&] { build_vocabulary(scratch + "/missing.txt", kLangs, 1, 0, nullptr); },
               "cannot open " + scratch + "/missing.txt", __LINE__);
  const std::string rare = write_file("rare.txt", "a b\tc d\n");
  check_throws([&] { build_vocabulary(rare, kLangs, 5, 0, nullptr); },
               "empty vocabulary: no en word of " + rare + " occurs at least 5 times", __LINE__);
  const std::string empty = write_file("empty.txt", "");
  check_throws([&] { build_vocabulary(empty, kLangs, 1, 0, nullptr); }, "is empty", __LINE__);
}

void test_line_reader() {
  const std::string path = write_file("lines.txt", "ab\r\ncd\nef");
  std::string_view line;
  LineReader r(path, 16);
  CHECK(r.file_size() == 9);
  CHECK(r.next(line) && line == "ab");  // '\r' dropped
  CHECK(r.next(line) && line == "cd");
  CHECK(r.next(line) && line == "ef");  // no final '\n'
  CHECK(!r.next(line));
  // A thread starting mid-line skips to the next line; at a line start it keeps that line.
  r.seek(1);
  CHECK(r.next(line) && line == "cd");
  r.seek(4);
  CHECK(r.next(line) && line == "cd");
  r.seek(5);
  CHECK(r.next(line) && line == "ef");
  r.seek(0);
  CHECK(r.offset() == 0 && r.next(line) && line == "ab");
  CHECK(r.offset() == 4 && r.next(line) && line == "cd" && r.offset() == 7);
  r.seek(2);  // mid-line: the next line's offset
  CHECK(r.offset() == 4);
  CHECK(r.next(line) && r.next(line) && line == "ef" && r.offset() == 9);
  // A line longer than the buffer grows it.
  const std::string long_line(100, 'x');
  const std::string path2 = write_file("long.txt", "a\n" + long_line + "\nb\n");
  LineReader r2(path2, 16);
  CHECK(r2.next(line) && line == "a");
  CHECK(r2.next(line) && line == long_line);
  CHECK(r2.next(line) && line == "b");
  CHECK(!r2.next(line));
}

void test_tokens() {
  std::vector<std::string> got;
  for_each_token("  a  bb c ", [&](std::string_view t) { got.emplace_back(t); });
  CHECK((got == std::vector<std::string>{"a", "bb", "c"}));
  std::string_view sides[2];
  CHECK(split_pair("x y\t", sides) && sides[0] == "x y" && sides[1].empty());
  CHECK(!split_pair("x y", sides));
}

void test_keep_probability() {
  // f = 10 / 1e6 = 1e-5, t / f = 10: sqrt(10) + 10 = 13.16227766 (always kept).
  CHECK_NEAR(keep_probability(10, 1000000, 1e-4), 13.16227766016838, 1e-9);
  // f = 1e-3, t / f = 0.1: sqrt(0.1) + 0.1 = 0.4162277660.
  CHECK_NEAR(keep_probability(1000, 1000000, 1e-4), 0.416227766016838, 1e-12);
}

void test_ngram_hash() {
  const int32_t pair[2] = {3, 5};
  // 3 * 116049371 + 5 = 348148118.
  CHECK(ngram_hash(pair, 2) == 348148118ULL);
  // A trigram past 2^64: ((2e9 * M + 2000000001) * M + 7) mod 2^64, M = 116049371,
  // = 10572327464581256674 (worked out with exact integer arithmetic).
  const int32_t tri[3] = {2000000000, 2000000001, 7};
  CHECK(ngram_hash(tri, 3) == 10572327464581256674ULL);

  std::vector<int32_t> line = {3, 5, 9};
  std::vector<char> dropped;
  add_ngrams(line, 2, 1000, 100, 0, nullptr, dropped);
  // Unigrams untouched; bigram (3, 5) -> 100 + 348148118 % 1000 = 218;
  // (5, 9) -> 5 * M + 9 = 580246864 -> 100 + 864 = 964.
  CHECK((line == std::vector<int32_t>{3, 5, 9, 218, 964}));
  std::vector<int32_t> uni = {3, 5, 9};
  add_ngrams(uni, 1, 1000, 100, 2, nullptr, dropped);
  CHECK(uni.size() == 3);
  std::vector<int32_t> tri_line = {3, 5, 9};
  add_ngrams(tri_line, 3, 1000, 100, 0, nullptr, dropped);
  // Appended per starting position: (3, 5) -> 218, then (3, 5, 9): 348148118 * M + 9 =
  // 40402370108733787, % 1000 = 787 -> 887; then (5, 9) -> 964.
  CHECK((tri_line == std::vector<int32_t>{3, 5, 9, 218, 887, 964}));
}

void test_dropout() {
  std::vector<int> times_dropped(6, 0);
  bool ok = true;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    Rng rng(seed);
    std::vector<int32_t> line = {10, 11, 12, 13, 14, 15};
    std::vector<char> dropped;
    add_ngrams(line, 2, 1000003, 0, 2, &rng, dropped);
    int n = 0;
    std::set<int32_t> expected;
    for (int i = 0; i < 6; ++i) {
      n += dropped[static_cast<size_t>(i)];
      times_dropped[static_cast<size_t>(i)] += dropped[static_cast<size_t>(i)];
      if (i < 5 && !dropped[static_cast<size_t>(i)] && !dropped[static_cast<size_t>(i + 1)]) {
        const int32_t ids[2] = {10 + i, 11 + i};
        expected.insert(static_cast<int32_t>(ngram_hash(ids, 2) % 1000003));
      }
    }
    ok = ok && n == 2;
    // The unigrams stay, in order; exactly the bigrams clear of both dropped tokens follow.
    for (int i = 0; i < 6; ++i) ok = ok && line[static_cast<size_t>(i)] == 10 + i;
    const std::set<int32_t> got(line.begin() + 6, line.end());
    ok = ok && got == expected && line.size() == 6 + expected.size();
  }
  CHECK(ok);
  // Each position is chosen with probability 2/6: 200 of 600 expected.
  for (int c : times_dropped) CHECK(c > 130 && c < 270);

  // Three tokens, k = 2: only one is dropped, so that two remain.
  Rng rng(1);
  std::vector<int32_t> three = {1, 2, 3};
  std::vector<char> dropped;
  add_ngrams(three, 2, 97, 0, 2, &rng, dropped);
  CHECK(dropped[0] + dropped[1] + dropped[2] == 1);
  // The bigram clear of the dropped token, if it is at an end; none if it is the middle one.
  CHECK(three.size() == (dropped[1] ? 3u : 4u));
  // Two tokens: nothing dropped, the bigram is there.
  std::vector<int32_t> two = {1, 2};
  add_ngrams(two, 2, 97, 0, 2, &rng, dropped);
  CHECK(two.size() == 3);
}

// Pearson's chi-square of observed counts against expected ones.
double chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double x = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    x += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  }
  return x;
}

void test_negative_table() {
  // sqrt(100) = 10 and sqrt(25) = 5: two thirds and one third of 300 slots.
  NegativeTable t = NegativeTable::from_counts({100, 25}, 300, 0, 1);
  int zeros = 0, ones = 0;
  for (size_t i = 0; i < t.size(); ++i) (t[i] == 0 ? zeros : ones)++;
  CHECK(zeros == 200 && ones == 100);
  // The same table for any number of threads, at sizes below, around and above the blocks'.
  for (const int64_t size : {1, 5, 127, 129, 1000, 100000}) {
    const std::vector<int64_t> counts = {9, 4, 1, 1};
    const NegativeTable one = NegativeTable::from_counts(counts, size, 7, 1);
    for (int threads = 2; threads <= 7; ++threads) {
      const NegativeTable many = NegativeTable::from_counts(counts, size, 7, threads);
      bool same = many.size() == one.size();
      for (size_t i = 0; same && i < one.size(); ++i) same = many[i] == one[i];
      CHECK(same);
    }
  }
}

void test_negative_table_is_a_uniform_shuffle() {
  // Four words of one entry each: the table is a permutation of 0..3, and each of the 24
  // should come up equally often over seeds. 24000 seeds, chi-square with 23 degrees of
  // freedom: 49.7 is its 0.999 quantile. (Seeded: the same outcome on every run.)
  std::vector<double> seen(24, 0);
  for (uint64_t seed = 0; seed < 24000; ++seed) {
    const NegativeTable t = NegativeTable::from_counts({1, 1, 1, 1}, 4, seed, 2);
    int code = 0, used = 0;  // the permutation's rank in the factorial number system
    for (size_t i = 0; i < 4; ++i) {
      int smaller = 0;  // unused values below t[i]
      for (int v = 0; v < t[i]; ++v) smaller += !(used >> v & 1);
      used |= 1 << t[i];
      code = code * static_cast<int>(4 - i) + smaller;
    }
    seen[static_cast<size_t>(code)] += 1;
  }
  CHECK(chi_square(seen, std::vector<double>(24, 1000.0)) < 49.7);
  // Entries in many blocks: 9, 4, 1, 1 -> 429, 286, 143 and 143 of 1001 entries. At the
  // first, a middle and the last position, over 4000 seeds, each word as often as its
  // share (3 degrees of freedom: 16.3 is the 0.999 quantile).
  const double copies[4] = {429, 286, 143, 143};
  for (const size_t position : {size_t{0}, size_t{500}, size_t{1000}}) {
    std::vector<double> words(4, 0), expected(4);
    for (uint64_t seed = 0; seed < 4000; ++seed) {
      const NegativeTable t = NegativeTable::from_counts({9, 4, 1, 1}, 1000, seed, 1);
      words[static_cast<size_t>(t[position])] += 1;
    }
    for (size_t w = 0; w < 4; ++w) expected[w] = 4000 * copies[w] / 1001;
    CHECK(chi_square(words, expected) < 16.3);
  }
}

void test_sgd_update() {
  // dim 2; context rows w0 = (0.1, 0.2), w1 = (0.3, -0.1); target word 0 with output row
  // u0 = (0.5, -0.5); one negative, word 2, u2 = (0.2, 0.4); lr 0.1.
  Matrix in(3, 2), out(3, 2);
  const float w[6] = {0.1f, 0.2f, 0.3f, -0.1f, 9.0f, 9.0f};
  const float u[6] = {0.5f, -0.5f, 7.0f, 7.0f, 0.2f, 0.4f};
  in.data.assign(w, w + 6);
  out.data.assign(u, u + 6);
  NegativeTable table(std::vector<int32_t>{2});
  Worker worker(in, out, table, 1, 0);
  const int32_t context[2] = {0, 1};
  const float loss = worker.update(context, 2, 0, 0.1f);
  // h = mean(w0, w1) = (0.2, 0.05).
  // Target: u0.h = 0.1 - 0.025 = 0.075, p = sigmoid(0.075) = 0.518741216,
  //   a = 0.1 (1 - p) = 0.048125878; g = a u0 = (0.024062939, -0.024062939);
  //   u0 += a h -> (0.509625176, -0.497593706).
  // Negative: u2.h = 0.04 + 0.02 = 0.06, q = sigmoid(0.06) = 0.514995502,
  //   b = 0.1 (0 - q) = -0.051499550; g += b u2 -> (0.013763029, -0.044662759);
  //   u2 += b h -> (0.189700090, 0.397425022).
  // Inputs get g / 2: w0 -> (0.106881515, 0.177668620), w1 -> (0.306881515, -0.122331380).
  // Loss: -log(p + 1e-5) - log(1 - q + 1e-5) = 1.379907359.
  const double tol = 1e-6;
  CHECK_NEAR(out.row(0)[0], 0.509625176, tol);
  CHECK_NEAR(out.row(0)[1], -0.497593706, tol);
  CHECK_NEAR(out.row(2)[0], 0.189700090, tol);
  CHECK_NEAR(out.row(2)[1], 0.397425022, tol);
  CHECK_NEAR(in.row(0)[0], 0.106881515, tol);
  CHECK_NEAR(in.row(0)[1], 0.177668620, tol);
  CHECK_NEAR(in.row(1)[0], 0.306881515, tol);
  CHECK_NEAR(in.row(1)[1], -0.122331380, tol);
  CHECK_NEAR(loss, 1.379907359, tol);
  // Rows outside the update are untouched.
  CHECK(in.row(2)[0] == 9.0f && out.row(1)[0] == 7.0f);
}

void test_one_word_sides() {
  // A pair of one word per side, "hello<TAB>katze": each word still gets its monolingual
  // update, from the placeholder row alone (the reference trainer sets context[i] = 0, the
  // id of its placeholder word, on a one-word side too), then its cross-lingual one.
  // dim 1, one negative (always the other word), lr 0.5 for all four updates (the clock
  // moves after the line), every word kept (-t 1: keep probability >= 2). Input rows:
  // hello 0.2, katze -0.4, placeholder 0.6; output rows 0. In order:
  //  1. hello from [placeholder], h = 0.6: hello's score 0.5, a = 0.25, u_hello = 0.15;
  //     katze's 0.5, a = -0.25, u_katze = -0.15; g = 0 (both rows were 0): placeholder
  //     unchanged. Loss -2 log(0.50001) = 1.386254362.
  //  2. hello from [katze], h = -0.4: p = sigmoid(-0.06) = 0.485004498, a = 0.257497751,
  //     g = a * 0.15; u_hello = 0.047000900; q = sigmoid(0.06) = 0.514995502, a' = -a,
  //     g += -a * -0.15 = 0.077249325: katze = -0.322750675. Loss 1.447152990.
  //  3. katze from [placeholder], h = 0.6: p = sigmoid(-0.047000900 * 0.6) = 0.492950332,
  //     a = 0.253524834, g = a * -0.047000900; u_katze = 0.105114001; q = 0.507049668,
  //     g += -0.253524834 * 0.047000900 -> g = -0.023831791: placeholder = 0.576168209.
  //     Loss 1.414653140.
  //  4. katze from [hello], h = 0.2: p = 0.505255506, q = 0.494744494, g = 0.052004573:
  //     hello = 0.252004573. Loss 1.365342465.
  // (the same steps in float64 with Python; the trainer computes in float32).
  const std::string path = write_file("one-word.txt", "hello\tkatze\n");
  Args args{};
  args.input = path;
  args.output = scratch + "/one-word";
  args.lang[0] = "en";
  args.lang[1] = "de";
  args.dim = 1;
  args.lr = 0.5;
  args.neg = 1;
  args.min_count = 1;
  args.word_ngrams = 1;
  args.epoch = 1;
  args.t = 1.0;
  args.threads = 1;
  args.seed = 0;
  args.lr_update_rate = 1;
  args.verbose = 0;
  args.negative_table_size = 10;
  Model m;
  m.args = args;
  m.vocab = build_vocabulary(path, kLangs, 1, 0, nullptr);
  CHECK(m.vocab.find(0, "hello") == 0 && m.vocab.find(1, "katze") == 1);
  m.input = Matrix(3, 1);
  m.input.data = {0.2f, -0.4f, 0.6f};
  m.output = Matrix(2, 1);
  Trainer trainer(m, args, m.vocab.ntokens());
  const TrainStats st = trainer.run();
  CHECK(st.tokens == 2);
  CHECK(st.updates[0] == 2 && st.updates[1] == 2);
  const double tol = 1e-6;
  CHECK_NEAR(m.input.row(2)[0], 0.576168209, tol);  // the placeholder: update 3
  CHECK_NEAR(m.input.row(0)[0], 0.252004573, tol);
  CHECK_NEAR(m.input.row(1)[0], -0.322750675, tol);
  CHECK_NEAR(m.output.row(0)[0], -0.154588450, tol);
  CHECK_NEAR(m.output.row(1)[0], 0.154588450, tol);
  CHECK_NEAR(st.loss[0], 1.386254362 + 1.414653140, 1e-5);
  CHECK_NEAR(st.loss[1], 1.447152990 + 1.365342465, 1e-5);
}

void test_rng() {
  Rng a(42), b(42), c(43), d(1);
  bool same = true, differs = false, in_range = true;
  std::vector<int> hist(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t x = a.next();
    same = same && x == b.next();
    differs = differs || x != c.next();
    const double u = d.uniform();
    in_range = in_range && u >= 0.0 && u < 1.0;
    ++hist[static_cast<size_t>(d.below(7))];
  }
  CHECK(same && differs && in_range);
  for (int h : hist) CHECK(h > 800 && h < 1200);  // 1000 expected each
}

void test_model_roundtrip() {
  Model m;
  m.args.lang[0] = "en";
  m.args.lang[1] = "kk";
  m.args.dim = 3;
  m.args.word_ngrams = 2;
  m.args.bucket = 4;
  m.vocab.add(0, "cat", 7);
  m.vocab.add(1, "мысық", 5);
  m.input = Matrix(2 + 1 + 4, 3);
  m.output = Matrix(2, 3);
  for (size_t i = 0; i < m.input.data.size(); ++i) m.input.data[i] = 0.5f * static_cast<float>(i);
  for (size_t i = 0; i < m.output.data.size(); ++i) m.output.data[i] = -1.0f * static_cast<float>(i);
  const std::string path = scratch + "/roundtrip.bin";
  save_model(path, m);
  Model back = load_model(path);
  CHECK(back.args.dim == 3 && back.args.word_ngrams == 2 && back.args.bucket == 4);
  CHECK(back.args.lang[0] == "en" && back.args.lang[1] == "kk");
  CHECK(back.vocab.size() == 2 && back.vocab.find(1, "мысық") == 1 && back.vocab.word(1).count == 5);
  CHECK(back.input.data == m.input.data && back.output.data == m.output.data);
  const std::string junk = write_file("junk.bin", "not a model at all");
  check_throws([&] { load_model(junk); }, "is not a bisent2vec model", __LINE__);
  const std::string cut = write_file("cut.bin", "BIS2VEC1\x03");
  check_throws([&] { load_model(cut); }, "ends early", __LINE__);
}

void test_args() {
  // Every training setting is required: the one set of defaults is the config schema's.
  std::vector<std::string> words = {"bisent2vec", "train", "-input", "x", "-output", "y",
                                    "-lang1", "en", "-lang2", "de"};
  const std::vector<std::string> settings = {
      "-dim", "300", "-lr", "0.2", "-neg", "10", "-minCount", "8", "-maxVocabSize", "750000",
      "-wordNgrams", "2", "-bucket", "2000000", "-dropoutK", "4", "-epoch", "5", "-t", "5e-6",
      "-thread", "1", "-seed", "42", "-lrUpdateRate", "100"};
  const auto parse = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& word : args) argv.push_back(word.data());
    return parse_train_args(static_cast<int>(argv.size()), argv.data(), 2);
  };
  std::vector<std::string> full = words;
  full.insert(full.end(), settings.begin(), settings.end());
  Args a = parse(full);
  CHECK(a.dim == 300 && a.word_ngrams == 2 && a.ngram_rows() == 2000000);
  CHECK(a.lr == 0.2 && a.neg == 10 && a.min_count == 8 && a.dropout_k == 4 && a.epoch == 5);
  CHECK(a.t == 5e-6 && a.max_vocab_size == 750000 && a.seed == 42 && a.lr_update_rate == 100);
  std::vector<std::string> without_lr = words;
  for (size_t i = 0; i < settings.size(); i += 2) {
    if (settings[i] != "-lr") without_lr.insert(without_lr.end(), {settings[i], settings[i + 1]});
  }
  check_throws([&] { parse(without_lr); }, "missing setting(s): -lr\n", __LINE__);
  check_throws([&] { parse(words); }, "missing setting(s): -dim -lr -neg", __LINE__);
  const char* bad[] = {"bisent2vec", "train", "-dim", "many"};
  check_throws([&] { parse_train_args(4, const_cast<char**>(bad), 2); },
               "-dim expects an integer, got 'many'", __LINE__);
  std::vector<std::string> same = full;
  same[9] = "en";  // -lang2 en
  check_throws([&] { parse(same); }, "two languages", __LINE__);
  const char* unknown[] = {"bisent2vec", "train", "-epochs", "3"};
  check_throws([&] { parse_train_args(4, const_cast<char**>(unknown), 2); },
               "unknown option -epochs", __LINE__);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) scratch = argv[1];
  mkdir(scratch.c_str(), 0755);
  const std::pair<const char*, void (*)()> tests[] = {
      {"vocabulary", test_vocabulary},         {"vocabulary_threads", test_vocabulary_threads},
      {"input_errors", test_input_errors},
      {"line_reader", test_line_reader},       {"tokens", test_tokens},
      {"keep_probability", test_keep_probability}, {"ngram_hash", test_ngram_hash},
      {"dropout", test_dropout},               {"negative_table", test_negative_table},
      {"negative_table_uniform", test_negative_table_is_a_uniform_shuffle},
      {"sgd_update", test_sgd_update},         {"one_word_sides", test_one_word_sides},
      {"rng", test_rng},                       {"model_roundtrip", test_model_roundtrip},
      {"args", test_args},
  };
  for (const auto& [name, test] : tests) {
    const int before = failures;
    try {
      test();
    } catch (const std::exception& e) {
      ++failures;
      std::fprintf(stderr, "%s: unexpected exception: %s\n", name, e.what());
    }
    std::printf("%-18s %s\n", name, failures == before ? "ok" : "FAILED");
  }
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
