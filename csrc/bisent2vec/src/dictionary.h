// The training text, the joint vocabulary of the two languages, subsampling and word n-grams.
//
// Training file: UTF-8, one sentence pair per line, the two sides separated by exactly one
// tab: `side-1 tokens<TAB>side-2 tokens`. Tokens are separated by spaces and hold none
// themselves (the Python side replaces whitespace inside a token). Side 1 is the language
// given as -lang1, side 2 the one given as -lang2. A side may be empty.
//
// Both languages share one vocabulary (and so one embedding matrix): a word is keyed by
// (language, text), so English "die" and German "die" are two words with two rows. This is
// Bi-Sent2vec's `word_en` / `word_de` tagging without storing the tags.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rng.h"

namespace bisent2vec {

// Something wrong with the user's input (a file, a flag): main() prints it and exits 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Word {
  std::string text;
  uint8_t lang = 0;  // 0: -lang1, 1: -lang2
  int64_t count = 0;
};

// Splits a training line at its tab. False unless there is exactly one tab.
bool split_pair(std::string_view line, std::string_view sides[2]);

// Calls f(token) for every space-separated token of a side (runs of spaces are one separator).
template <class F>
void for_each_token(std::string_view side, F&& f) {
  size_t start = 0;
  const size_t n = side.size();
  while (start < n) {
    while (start < n && side[start] == ' ') ++start;
    size_t end = start;
    while (end < n && side[end] != ' ') ++end;
    if (end > start) f(side.substr(start, end - start));
    start = end;
  }
}

// Reads a file line by line through a large buffer, optionally from a byte offset. Lines
// come back without their '\n' (and without a trailing '\r').
class LineReader {
 public:
  explicit LineReader(const std::string& path, size_t buffer_size = 1 << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Positions the reader at the first line that starts at or after byte `offset`.
  void seek(uint64_t offset);
  // The next line, or false at the end of the file. The view lives until the next call.
  bool next(std::string_view& line);
  // The byte offset of the line `next` returns next (the file's size at its end).
  uint64_t offset() const { return base_ + begin_; }
  uint64_t file_size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  bool fill();
  std::string path_;
  FILE* file_ = nullptr;
  uint64_t size_ = 0;
  std::vector<char> buf_;
  uint64_t base_ = 0;  // the file offset of buf_[0]
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
};

// The joint vocabulary: an open-addressing hash table over (language, text).
class Vocabulary {
 public:
  // Adds `count` occurrences of a word, creating it if new.
  void add(uint8_t lang, std::string_view text, int64_t count = 1);
  // The id of a word, or -1.
  int32_t find(uint8_t lang, std::string_view text) const;
  // Keeps the words seen at least `min_count` times and then, if max_size > 0, the max_size
  // most frequent; ids follow count (descending), then language, then the bytes of the text,
  // so they never depend on hash-table order.
  void prune(int64_t min_count, int64_t max_size);

  int32_t size() const { return static_cast<int32_t>(words_.size()); }
  int32_t size_of(uint8_t lang) const;
  const Word& word(int32_t id) const { return words_[static_cast<size_t>(id)]; }
  const std::vector<Word>& words() const { return words_; }
  // The sum of the counts of the words in the vocabulary.
  int64_t ntokens() const;

 private:
  size_t probe(uint64_t hash, uint8_t lang, std::string_view text) const;
  void rehash(size_t capacity);
  std::vector<Word> words_;
  std::vector<uint64_t> hashes_;
  std::vector<int32_t> slots_;  // -1: empty
};

struct CorpusInfo {
  int64_t lines = 0;
  int64_t tokens[2] = {0, 0};    // every token read, per side
  int64_t distinct[2] = {0, 0};  // distinct words before pruning, per side
};

// Reads the training file once, checking every line, and returns its pruned vocabulary.
// `threads` threads count the words of equal byte ranges of the file, whose counts are then
// summed: the vocabulary (ids follow counts, then language and text) is the same for any
// number. Throws InputError naming the file (and line) when the file is missing, a line is
// malformed, or no word of a language occurs min_count times.
Vocabulary build_vocabulary(const std::string& path, const std::string langs[2], int64_t min_count,
                            int64_t max_size, CorpusInfo* info, int threads = 1);

// The probability of keeping an occurrence of a word of relative frequency f = count /
// ntokens: sqrt(t / f) + t / f (sent2vec's rule; 1 or more means always kept).
double keep_probability(int64_t count, int64_t ntokens, double t);

// fastText's hash of a word n-gram from its word ids: h = id0, then h = h * 116049371 + id_k
// in 64-bit unsigned arithmetic. The n-gram's row is first_bucket_row + h % bucket.
constexpr uint64_t kNgramMultiplier = 116049371ULL;
inline uint64_t ngram_hash(const int32_t* ids, size_t n) {
  uint64_t h = static_cast<uint64_t>(ids[0]);
  for (size_t k = 1; k < n; ++k) h = h * kNgramMultiplier + static_cast<uint64_t>(ids[k]);
  return h;
}

// Appends to `line` the rows of its word n-grams of length 2..max_n (first_row + hash %
// bucket). With dropout (rng given, dropout_k > 0), up to dropout_k distinct positions are
// chosen uniformly, one at a time while more than 2 positions remain unchosen, and no n-gram
// spanning a chosen position is added; the unigrams all stay (sent2vec's n-gram dropout).
// `dropped` is scratch space that ends up marking the chosen positions.
void add_ngrams(std::vector<int32_t>& line, int max_n, uint64_t bucket, int64_t first_row,
                int dropout_k, Rng* rng, std::vector<char>& dropped);

}  // namespace bisent2vec
