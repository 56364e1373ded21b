#include "model_io.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace bisent2vec {

namespace {

constexpr char kModelMagic[8] = {'B', 'I', 'S', '2', 'V', 'E', 'C', '1'};
constexpr char kNgramMagic[8] = {'B', 'I', 'S', '2', 'N', 'G', 'R', '1'};
constexpr size_t kAlign = 64;

bool little_endian() {
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<FILE, FileCloser>;

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    if (!little_endian()) throw InputError("model files are little-endian; this host is not");
  }
  void bytes(const void* p, size_t n) {
    if (n > 0 && std::fwrite(p, 1, n, f_.get()) != n) {
      throw InputError("cannot write " + path_ + ": " + std::strerror(errno));
    }
    offset_ += n;
  }
  template <class T>
  void value(T v) {
    bytes(&v, sizeof(T));
  }
  void string(const std::string& s) {
    value<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void pad() {
    const char zeros[kAlign] = {};
    bytes(zeros, (kAlign - offset_ % kAlign) % kAlign);
  }
  void floats(const std::vector<float>& v) { bytes(v.data(), v.size() * sizeof(float)); }
  void floats(const float* p, size_t n) { bytes(p, n * sizeof(float)); }
  void close() {
    if (std::fclose(f_.release()) != 0) {
      throw InputError("cannot write " + path_ + ": " + std::strerror(errno));
    }
  }

 private:
  std::string path_;
  File f_;
  size_t offset_ = 0;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    if (!f_) throw InputError("cannot open model " + path + ": " + std::strerror(errno));
  }
  void bytes(void* p, size_t n) {
    if (n > 0 && std::fread(p, 1, n, f_.get()) != n) {
      throw InputError(path_ + " ends early: the model file is cut short (an interrupted copy?)");
    }
    offset_ += n;
  }
  template <class T>
  T value() {
    T v;
    bytes(&v, sizeof(T));
    return v;
  }
  std::string string(size_t max_len) {
    const auto n = value<uint32_t>();
    if (n > max_len) throw InputError(path_ + " is corrupt: a string of " + std::to_string(n) +
                                      " bytes");
    std::string s(n, '\0');
    bytes(s.data(), n);
    return s;
  }
  void pad() {
    char zeros[kAlign];
    bytes(zeros, (kAlign - offset_ % kAlign) % kAlign);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  File f_;
  size_t offset_ = 0;
};

}  // namespace

void save_model(const std::string& path, const Model& m) {
  Writer w(path);
  const Args& a = m.args;
  w.bytes(kModelMagic, sizeof(kModelMagic));
  for (int v : {a.dim, a.word_ngrams, a.neg, a.dropout_k, a.epoch, a.threads}) {
    w.value<uint32_t>(static_cast<uint32_t>(v));
  }
  w.value<uint64_t>(static_cast<uint64_t>(a.ngram_rows()));
  w.value<uint64_t>(static_cast<uint64_t>(m.vocab.size()));
  w.value<uint64_t>(static_cast<uint64_t>(a.min_count));
  w.value<uint64_t>(static_cast<uint64_t>(a.max_vocab_size));
  w.value<uint64_t>(a.seed);
  w.value<double>(a.lr);
  w.value<double>(a.t);
  w.string(a.lang[0]);
  w.string(a.lang[1]);
  for (const Word& word : m.vocab.words()) {
    w.value<uint8_t>(word.lang);
    w.string(word.text);
    w.value<uint64_t>(static_cast<uint64_t>(word.count));
  }
  w.pad();
  w.floats(m.input.data);
  w.floats(m.output.data);
  w.close();
}

Model load_model(const std::string& path) {
  Reader r(path);
  char magic[8];
  r.bytes(magic, sizeof(magic));
  if (std::memcmp(magic, kModelMagic, sizeof(magic)) != 0) {
    throw InputError(path + " is not a bisent2vec model (format 1): expected a PREFIX.bin "
                            "written by `bisent2vec train`");
  }
  Model m;
  Args& a = m.args;
  a.dim = static_cast<int>(r.value<uint32_t>());
  a.word_ngrams = static_cast<int>(r.value<uint32_t>());
  a.neg = static_cast<int>(r.value<uint32_t>());
  a.dropout_k = static_cast<int>(r.value<uint32_t>());
  a.epoch = static_cast<int>(r.value<uint32_t>());
  a.threads = static_cast<int>(r.value<uint32_t>());
  const auto ngram_rows = static_cast<int64_t>(r.value<uint64_t>());
  const auto nwords = static_cast<int64_t>(r.value<uint64_t>());
  a.min_count = static_cast<int64_t>(r.value<uint64_t>());
  a.max_vocab_size = static_cast<int64_t>(r.value<uint64_t>());
  a.seed = r.value<uint64_t>();
  a.lr = r.value<double>();
  a.t = r.value<double>();
  a.lang[0] = r.string(256);
  a.lang[1] = r.string(256);
  if (a.word_ngrams > 1) a.bucket = ngram_rows;
  if (a.dim < 1 || nwords < 0 || ngram_rows < 0 || a.ngram_rows() != ngram_rows) {
    throw InputError(path + " is corrupt: impossible shape in its header");
  }
  for (int64_t i = 0; i < nwords; ++i) {
    const auto lang = r.value<uint8_t>();
    const std::string text = r.string(1 << 20);
    const auto count = static_cast<int64_t>(r.value<uint64_t>());
    if (lang > 1) throw InputError(path + " is corrupt: word " + std::to_string(i) +
                                   " has language " + std::to_string(lang));
    m.vocab.add(lang, text, count);
  }
  if (m.vocab.size() != nwords) throw InputError(path + " is corrupt: duplicated words");
  r.pad();
  m.input = Matrix(nwords + 1 + ngram_rows, a.dim);
  m.output = Matrix(nwords, a.dim);
  r.bytes(m.input.data.data(), m.input.data.size() * sizeof(float));
  r.bytes(m.output.data.data(), m.output.data.size() * sizeof(float));
  return m;
}

void save_vectors(const std::string& path, const Model& m, uint8_t lang) {
  std::vector<char> buffer(1 << 20);  // few large writes (stdio's default is a page): outlives f
  File f(std::fopen(path.c_str(), "w"));
  if (!f) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  std::setvbuf(f.get(), buffer.data(), _IOFBF, buffer.size());
  std::fprintf(f.get(), "%d %d\n", m.vocab.size_of(lang), m.args.dim);
  // Each number as printf's "%.6g" writes it (std::to_chars is specified to match it) in a
  // fraction of printf's time: the file is written after training, by one thread.
  std::string text;
  char number[32];
  for (int32_t id = 0; id < m.vocab.size(); ++id) {
    const Word& w = m.vocab.word(id);
    if (w.lang != lang) continue;
    text = w.text;
    const float* row = m.input.row(id);
    for (int k = 0; k < m.args.dim; ++k) {
      const auto end = std::to_chars(number, number + sizeof(number), static_cast<double>(row[k]),
                                     std::chars_format::general, 6).ptr;
      text += ' ';
      text.append(number, end);
    }
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), f.get());
  }
  if (std::fclose(f.release()) != 0) {
    throw InputError("cannot write " + path + ": " + std::strerror(errno));
  }
}

void save_ngrams(const std::string& path, const Model& m) {
  Writer w(path);
  w.bytes(kNgramMagic, sizeof(kNgramMagic));
  w.value<uint32_t>(static_cast<uint32_t>(m.args.dim));
  w.value<uint32_t>(static_cast<uint32_t>(m.args.word_ngrams));
  const int64_t first = m.vocab.size() + 1;
  w.value<uint64_t>(static_cast<uint64_t>(m.args.ngram_rows()));
  w.value<uint64_t>(static_cast<uint64_t>(first));
  w.pad();
  w.floats(m.input.row(first), static_cast<size_t>(m.args.ngram_rows() * m.args.dim));
  w.close();
}

}  // namespace bisent2vec
