#include "dictionary.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numeric>

#include "parallel.h"

namespace bisent2vec {

namespace {

uint64_t word_hash(uint8_t lang, std::string_view text) {
  // FNV-1a (64 bit) over the language byte and then the word's bytes.
  uint64_t h = 14695981039346656037ULL;
  h = (h ^ lang) * 1099511628211ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string describe_errno() { return std::strerror(errno); }

}  // namespace

bool split_pair(std::string_view line, std::string_view sides[2]) {
  const size_t tab = line.find('\t');
  if (tab == std::string_view::npos || line.find('\t', tab + 1) != std::string_view::npos) {
    return false;
  }
  sides[0] = line.substr(0, tab);
  sides[1] = line.substr(tab + 1);
  return true;
}

// -- LineReader ------------------------------------------------------------------------------

LineReader::LineReader(const std::string& path, size_t buffer_size)
    : path_(path), buf_(std::max<size_t>(buffer_size, 16)) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw InputError("cannot open " + path + ": " + describe_errno());
  }
  if (std::fseek(file_, 0, SEEK_END) != 0) {
    throw InputError("cannot seek in " + path + ": " + describe_errno());
  }
  size_ = static_cast<uint64_t>(std::ftell(file_));
  std::rewind(file_);
}

LineReader::~LineReader() {
  if (file_ != nullptr) std::fclose(file_);
}

void LineReader::seek(uint64_t offset) {
  begin_ = end_ = 0;
  eof_ = false;
  if (offset == 0 || offset >= size_) {
    std::rewind(file_);
    base_ = 0;
    if (offset >= size_ && size_ > 0) {
      eof_ = true;
      base_ = size_;
      std::fseek(file_, 0, SEEK_END);
    }
    return;
  }
  // Read from the byte before `offset` and drop everything up to the first '\n': if that
  // byte is the '\n' itself, `offset` already starts a line and nothing else is dropped.
  std::fseek(file_, static_cast<long>(offset - 1), SEEK_SET);
  base_ = offset - 1;
  std::string_view partial;
  next(partial);
}

bool LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {  // move the unread tail to the front
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    base_ += begin_;
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);  // a line longer than the buffer
  const size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_);
  if (got == 0) {
    if (std::ferror(file_)) throw InputError("cannot read " + path_ + ": " + describe_errno());
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

bool LineReader::next(std::string_view& line) {
  size_t scanned = begin_;
  while (true) {
    const char* nl = static_cast<const char*>(
        std::memchr(buf_.data() + scanned, '\n', end_ - scanned));
    if (nl != nullptr) {
      const size_t pos = static_cast<size_t>(nl - buf_.data());
      size_t len = pos - begin_;
      if (len > 0 && buf_[begin_ + len - 1] == '\r') --len;
      line = std::string_view(buf_.data() + begin_, len);
      begin_ = pos + 1;
      return true;
    }
    const size_t scanned_len = end_ - begin_;
    if (!fill()) {
      if (end_ == begin_) return false;
      size_t len = end_ - begin_;  // a last line without '\n'
      if (buf_[begin_ + len - 1] == '\r') --len;
      line = std::string_view(buf_.data() + begin_, len);
      begin_ = end_;
      return true;
    }
    scanned = begin_ + scanned_len;  // fill() moved the unread bytes to the front
  }
}

// -- Vocabulary ------------------------------------------------------------------------------

size_t Vocabulary::probe(uint64_t hash, uint8_t lang, std::string_view text) const {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash) & mask;
  while (true) {
    const int32_t id = slots_[i];
    if (id < 0) return i;
    const Word& w = words_[static_cast<size_t>(id)];
    if (hashes_[static_cast<size_t>(id)] == hash && w.lang == lang && w.text == text) return i;
    i = (i + 1) & mask;
  }
}

void Vocabulary::rehash(size_t capacity) {
  slots_.assign(capacity, -1);
  const size_t mask = capacity - 1;
  for (size_t id = 0; id < words_.size(); ++id) {
    size_t i = static_cast<size_t>(hashes_[id]) & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = static_cast<int32_t>(id);
  }
}

void Vocabulary::add(uint8_t lang, std::string_view text, int64_t count) {
  if (slots_.empty()) rehash(1024);
  const uint64_t hash = word_hash(lang, text);
  size_t i = probe(hash, lang, text);
  if (slots_[i] >= 0) {
    words_[static_cast<size_t>(slots_[i])].count += count;
    return;
  }
  if ((words_.size() + 1) * 10 > slots_.size() * 7) {  // keep the load under 0.7
    rehash(slots_.size() * 2);
    i = probe(hash, lang, text);
  }
  slots_[i] = static_cast<int32_t>(words_.size());
  words_.push_back(Word{std::string(text), lang, count});
  hashes_.push_back(hash);
}

int32_t Vocabulary::find(uint8_t lang, std::string_view text) const {
  if (slots_.empty()) return -1;
  return slots_[probe(word_hash(lang, text), lang, text)];
}

void Vocabulary::prune(int64_t min_count, int64_t max_size) {
  std::vector<Word> kept;
  for (Word& w : words_) {
    if (w.count >= min_count) kept.push_back(std::move(w));
  }
  std::sort(kept.begin(), kept.end(), [](const Word& a, const Word& b) {
    if (a.count != b.count) return a.count > b.count;
    if (a.lang != b.lang) return a.lang < b.lang;
    return a.text < b.text;
  });
  if (max_size > 0 && static_cast<int64_t>(kept.size()) > max_size) {
    kept.resize(static_cast<size_t>(max_size));
  }
  words_ = std::move(kept);
  hashes_.clear();
  for (const Word& w : words_) hashes_.push_back(word_hash(w.lang, w.text));
  size_t capacity = 1024;
  while (capacity * 7 < words_.size() * 10 + 10) capacity *= 2;
  rehash(capacity);
}

int32_t Vocabulary::size_of(uint8_t lang) const {
  return static_cast<int32_t>(
      std::count_if(words_.begin(), words_.end(), [lang](const Word& w) { return w.lang == lang; }));
}

int64_t Vocabulary::ntokens() const {
  int64_t n = 0;
  for (const Word& w : words_) n += w.count;
  return n;
}

namespace {

// The words of the lines that start in one byte range of the training file.
struct Chunk {
  Vocabulary vocab;
  CorpusInfo info;
  int64_t bad_line = 0;  // its first line without exactly one tab (1-based in the chunk), or 0
  size_t bad_tabs = 0;
};

void count_chunk(const std::string& path, uint64_t begin, uint64_t end, Chunk& c) {
  LineReader reader(path);
  reader.seek(begin);
  std::string_view line, sides[2];
  while (reader.offset() < end && reader.next(line)) {
    ++c.info.lines;
    if (!split_pair(line, sides)) {
      c.bad_line = c.info.lines;
      c.bad_tabs = static_cast<size_t>(std::count(line.begin(), line.end(), '\t'));
      return;
    }
    for (uint8_t s = 0; s < 2; ++s) {
      for_each_token(sides[s], [&](std::string_view token) {
        c.vocab.add(s, token);
        ++c.info.tokens[s];
      });
    }
  }
}

}  // namespace

Vocabulary build_vocabulary(const std::string& path, const std::string langs[2], int64_t min_count,
                            int64_t max_size, CorpusInfo* info, int threads) {
  const uint64_t size = LineReader(path).file_size();  // a missing file: one clear error here
  std::vector<Chunk> chunks(static_cast<size_t>(std::max(threads, 1)));
  const uint64_t n = chunks.size();
  parallel_for(n, threads, [&](size_t i) {
    count_chunk(path, size * i / n, size * (i + 1) / n, chunks[i]);
  });
  CorpusInfo local;
  for (const Chunk& c : chunks) {
    if (c.bad_line > 0) {  // the first malformed line of the file, numbered from its start
      throw InputError(path + ":" + std::to_string(local.lines + c.bad_line) +
                       ": expected one tab between the " + langs[0] + " and " + langs[1] +
                       " tokens, found " + std::to_string(c.bad_tabs) + "; write each pair as `" +
                       langs[0] + " tokens<TAB>" + langs[1] +
                       " tokens` (xlsent's bisent2vec data writer does)");
    }
    local.lines += c.info.lines;
    for (uint8_t s = 0; s < 2; ++s) local.tokens[s] += c.info.tokens[s];
  }
  Vocabulary vocab = std::move(chunks[0].vocab);
  for (size_t i = 1; i < chunks.size(); ++i) {
    for (const Word& w : chunks[i].vocab.words()) vocab.add(w.lang, w.text, w.count);
    chunks[i].vocab = Vocabulary();  // its memory back before the next chunk's words are added
  }
  if (local.lines == 0) {
    throw InputError(path + " is empty: it needs one `" + langs[0] + " tokens<TAB>" + langs[1] +
                     " tokens` pair per line");
  }
  for (const Word& w : vocab.words()) ++local.distinct[w.lang];
  vocab.prune(min_count, max_size);
  for (uint8_t s = 0; s < 2; ++s) {
    if (vocab.size_of(s) == 0) {
      throw InputError(
          "empty vocabulary: no " + langs[s] + " word of " + path + " occurs at least " +
          std::to_string(min_count) + " times (" + std::to_string(local.distinct[s]) +
          " distinct words in " + std::to_string(local.tokens[s]) + " tokens over " +
          std::to_string(local.lines) + " lines); lower -minCount or train on more pairs");
    }
  }
  if (info != nullptr) *info = local;
  return vocab;
}

double keep_probability(int64_t count, int64_t ntokens, double t) {
  const double f = static_cast<double>(count) / static_cast<double>(ntokens);
  return std::sqrt(t / f) + t / f;
}

void add_ngrams(std::vector<int32_t>& line, int max_n, uint64_t bucket, int64_t first_row,
                int dropout_k, Rng* rng, std::vector<char>& dropped) {
  const size_t size = line.size();
  dropped.assign(size, 0);
  if (max_n <= 1 || bucket == 0) return;
  if (rng != nullptr && dropout_k > 0) {
    size_t ndropped = 0;
    while (ndropped < static_cast<size_t>(dropout_k) && size - ndropped > 2) {
      const size_t pos = static_cast<size_t>(rng->below(size));
      if (!dropped[pos]) {
        dropped[pos] = 1;
        ++ndropped;
      }
    }
  }
  for (size_t i = 0; i < size; ++i) {
    if (dropped[i]) continue;
    uint64_t h = static_cast<uint64_t>(line[i]);
    for (size_t j = i + 1; j < size && j < i + static_cast<size_t>(max_n); ++j) {
      if (dropped[j]) break;
      h = h * kNgramMultiplier + static_cast<uint64_t>(line[j]);
      line.push_back(static_cast<int32_t>(first_row + static_cast<int64_t>(h % bucket)));
    }
  }
}

}  // namespace bisent2vec
