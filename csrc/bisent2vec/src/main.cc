// bisent2vec: train cross-lingual word and sentence vectors from parallel sentences
// (Bi-Sent2vec, Sabet et al. 2019), and print sentence vectors of a trained model.
//
//   bisent2vec train -input pairs.txt -output PREFIX -lang1 en -lang2 de [options]
//   bisent2vec sentence-vectors -model PREFIX.bin -lang de < sentences.txt
//
// Exit status: 0 done, 2 a problem with the input or the flags (one line on stderr naming
// the file and the fix), 3 out of memory, 1 anything else.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <vector>

#include "args.h"
#include "dictionary.h"
#include "model_io.h"
#include "parallel.h"
#include "trainer.h"

namespace bisent2vec {
namespace {

// The process's peak resident memory in MiB (VmHWM, Linux), or -1 where unknown. Read here
// rather than by the parent through wait4, whose ru_maxrss also counts what a parent that
// forked this process had resident (it is kept across fork and exec).
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1.0;
}

// CPU seconds (user + system, all threads) this process has used so far.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void write_stats(const std::string& path, const Model& m, const CorpusInfo& info,
                 int64_t ntokens, const TrainStats& st, double cpu, const Args& a) {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write " + path);
  out.precision(9);
  const std::string& l0 = a.lang[0];
  const std::string& l1 = a.lang[1];
  out << "{\n"
      << "  \"langs\": [" << json_string(l0) << ", " << json_string(l1) << "],\n"
      << "  \"lines\": " << info.lines << ",\n"
      << "  \"tokens_read\": {" << json_string(l0) << ": " << info.tokens[0] << ", "
      << json_string(l1) << ": " << info.tokens[1] << "},\n"
      << "  \"distinct_words\": {" << json_string(l0) << ": " << info.distinct[0] << ", "
      << json_string(l1) << ": " << info.distinct[1] << "},\n"
      << "  \"vocabulary\": {" << json_string(l0) << ": " << m.vocab.size_of(0) << ", "
      << json_string(l1) << ": " << m.vocab.size_of(1) << "},\n"
      << "  \"ngram_rows\": " << a.ngram_rows() << ",\n"
      << "  \"tokens_per_epoch\": " << ntokens << ",\n"
      << "  \"tokens_processed\": " << st.tokens << ",\n"
      << "  \"threads\": " << a.threads << ",\n"
      << "  \"seconds\": " << st.seconds << ",\n"
      << "  \"cpu_seconds\": " << cpu << ",\n"
      << "  \"words_per_sec_per_thread\": " << st.words_per_sec_per_thread(a.threads) << ",\n"
      << "  \"peak_rss_mb\": " << peak_rss_mb() << ",\n"
      << "  \"updates\": {\"mono\": " << st.updates[0] << ", \"cross\": " << st.updates[1]
      << "},\n"
      << "  \"loss\": {\"mono\": " << st.mean_loss(0) << ", \"cross\": " << st.mean_loss(1)
      << ", \"all\": " << st.mean_loss() << "},\n"
      << "  \"loss_by_epoch\": [";
  for (size_t e = 0; e < st.epoch_loss.size(); ++e) {
    const double mean = st.epoch_updates[e] ? st.epoch_loss[e] / st.epoch_updates[e] : 0.0;
    out << (e ? ", " : "") << mean;
  }
  out << "],\n"
      << "  \"settings\": {\"dim\": " << a.dim << ", \"lr\": " << a.lr << ", \"neg\": " << a.neg
      << ", \"minCount\": " << a.min_count << ", \"maxVocabSize\": " << a.max_vocab_size
      << ", \"wordNgrams\": " << a.word_ngrams << ", \"bucket\": " << a.bucket
      << ", \"dropoutK\": " << a.dropout_k << ", \"epoch\": " << a.epoch << ", \"t\": " << a.t
      << ", \"seed\": " << a.seed << ", \"lrUpdateRate\": " << a.lr_update_rate
      << ", \"resumed_from\": " << json_string(a.resume) << "}\n"
      << "}\n";
  if (!out) throw InputError("cannot write " + path);
}

int train(int argc, char** argv) {
  Args args = parse_train_args(argc, argv, 2);
  Model model;
  CorpusInfo info;
  int64_t ntokens = 0;
  if (!args.resume.empty()) {
    model = load_model(args.resume);
    for (int s = 0; s < 2; ++s) {
      if (model.args.lang[s] != args.lang[s]) {
        throw InputError(args.resume + " was trained for " + model.args.lang[0] + "-" +
                         model.args.lang[1] + ", not " + args.lang[0] + "-" + args.lang[1]);
      }
    }
    // The shape comes from the model; the schedule (lr, epochs, threads...) from the flags.
    args.dim = model.args.dim;
    args.word_ngrams = model.args.word_ngrams;
    if (args.word_ngrams > 1) args.bucket = model.args.bucket;  // a unigram model has none
    args.min_count = model.args.min_count;
    args.max_vocab_size = model.args.max_vocab_size;
    ntokens = count_tokens(args.input, model.vocab, args.lang);
    if (args.verbose >= 1) {
      std::fprintf(stderr, "resuming from %s: %d words, dim %d\n", args.resume.c_str(),
                   model.vocab.size(), args.dim);
    }
  } else {
    model.vocab = build_vocabulary(args.input, args.lang, args.min_count, args.max_vocab_size,
                                   &info, args.threads);
    ntokens = model.vocab.ntokens();
    const int64_t rows = model.vocab.size() + 1 + args.ngram_rows();
    if (args.verbose >= 1) {
      std::fprintf(stderr,
                   "read %lld lines: %lld %s and %lld %s tokens; vocabulary %d %s + %d %s words "
                   "(minCount %lld), %lld input rows of dim %d\n",
                   static_cast<long long>(info.lines), static_cast<long long>(info.tokens[0]),
                   args.lang[0].c_str(), static_cast<long long>(info.tokens[1]),
                   args.lang[1].c_str(), model.vocab.size_of(0), args.lang[0].c_str(),
                   model.vocab.size_of(1), args.lang[1].c_str(),
                   static_cast<long long>(args.min_count), static_cast<long long>(rows), args.dim);
    }
    model.input = Matrix(rows, args.dim);
    Rng init(args.seed);
    model.input.uniform(1.0f / static_cast<float>(args.dim), init);
    model.output = Matrix(model.vocab.size(), args.dim);
  }
  model.args = args;

  Trainer trainer(model, args, ntokens);
  const double cpu_before = cpu_seconds();
  const TrainStats stats = trainer.run();
  const double cpu = cpu_seconds() - cpu_before;  // the training loop's, all threads
  if (args.verbose >= 1) {
    std::fprintf(stderr,
                 "trained %d epochs of %lld tokens in %.1f s with %d threads: words/sec/thread "
                 "%.0f, %lld monolingual + %lld cross-lingual updates, average loss %.6f "
                 "(monolingual %.6f, cross-lingual %.6f)\n",
                 args.epoch, static_cast<long long>(ntokens), stats.seconds, args.threads,
                 stats.words_per_sec_per_thread(args.threads),
                 static_cast<long long>(stats.updates[0]),
                 static_cast<long long>(stats.updates[1]), stats.mean_loss(),
                 stats.mean_loss(0), stats.mean_loss(1));
  }
  // The files only read the model: written at once, the largest (text) first.
  std::vector<std::function<void()>> saves;
  for (uint8_t s = 0; s < 2; ++s) {
    saves.emplace_back(
        [&, s] { save_vectors(args.output + "." + args.lang[s] + ".vec", model, s); });
  }
  saves.emplace_back([&] { save_model(args.output + ".bin", model); });
  if (args.ngram_rows() > 0) {
    saves.emplace_back([&] { save_ngrams(args.output + ".ngrams.bin", model); });
  }
  parallel_for(saves.size(), args.threads, [&](size_t i) { saves[i](); });
  write_stats(args.output + ".json", model, info, ntokens, stats, cpu, args);
  return 0;
}

// One tokenized sentence per input line -> its vector (the average of its word and n-gram
// rows, words outside the vocabulary left out) on one output line; no word known: zeros.
int sentence_vectors(int argc, char** argv) {
  std::string model_path, lang, input;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw InputError(flag + " needs a value");
    if (flag == "-model") model_path = argv[i + 1];
    else if (flag == "-lang") lang = argv[i + 1];
    else if (flag == "-input") input = argv[i + 1];
    else throw InputError("unknown option " + flag +
                          "; usage: bisent2vec sentence-vectors -model PREFIX.bin -lang CODE "
                          "[-input FILE (default: stdin)]");
  }
  if (model_path.empty() || lang.empty()) {
    throw InputError("usage: bisent2vec sentence-vectors -model PREFIX.bin -lang CODE "
                     "[-input FILE (default: stdin)]");
  }
  const Model model = load_model(model_path);
  int side = -1;
  for (int s = 0; s < 2; ++s) {
    if (model.args.lang[s] == lang) side = s;
  }
  if (side < 0) {
    throw InputError(model_path + " knows " + model.args.lang[0] + " and " + model.args.lang[1] +
                     ", not -lang " + lang);
  }
  std::ifstream file;
  if (!input.empty()) {
    file.open(input);
    if (!file) throw InputError("cannot open " + input);
  }
  std::istream& in = input.empty() ? std::cin : file;
  const int dim = model.args.dim;
  const auto bucket = static_cast<uint64_t>(model.args.ngram_rows());
  const int64_t first_bucket_row = model.vocab.size() + 1;
  std::vector<int32_t> rows;
  std::vector<char> dropped;
  std::vector<float> vec(static_cast<size_t>(dim));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    rows.clear();
    for_each_token(line, [&](std::string_view token) {
      const int32_t id = model.vocab.find(static_cast<uint8_t>(side), token);
      if (id >= 0) rows.push_back(id);
    });
    add_ngrams(rows, model.args.word_ngrams, bucket, first_bucket_row, 0, nullptr, dropped);
    std::fill(vec.begin(), vec.end(), 0.0f);
    for (int32_t r : rows) {
      const float* v = model.input.row(r);
      for (int k = 0; k < dim; ++k) vec[static_cast<size_t>(k)] += v[k];
    }
    if (!rows.empty()) {
      const float inv = 1.0f / static_cast<float>(rows.size());
      for (float& x : vec) x *= inv;
    }
    for (int k = 0; k < dim; ++k) {
      std::printf(k ? " %.9g" : "%.9g", static_cast<double>(vec[static_cast<size_t>(k)]));
    }
    std::printf("\n");
  }
  return 0;
}

const char* kUsage =
    "usage:\n"
    "  bisent2vec train -input FILE -output PREFIX -lang1 CODE -lang2 CODE [options]\n"
    "  bisent2vec sentence-vectors -model PREFIX.bin -lang CODE [-input FILE]\n"
    "  bisent2vec help train\n";

}  // namespace
}  // namespace bisent2vec

int main(int argc, char** argv) {
  using namespace bisent2vec;
  const std::string command = argc > 1 ? argv[1] : "";
  try {
    if (command == "train") return train(argc, argv);
    if (command == "sentence-vectors") return sentence_vectors(argc, argv);
    if (command == "help" || command == "-h" || command == "--help") {
      std::fputs(argc > 2 && std::strcmp(argv[2], "train") == 0 ? train_usage().c_str() : kUsage,
                 stdout);
      return 0;
    }
    std::fprintf(stderr, "bisent2vec: error: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const InputError& e) {
    std::fprintf(stderr, "bisent2vec: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "bisent2vec: error: out of memory; the input matrix holds (words + 1 + bucket) "
                 "x dim floats: lower -bucket, -dim or -maxVocabSize\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bisent2vec: internal error: %s\n", e.what());
    return 1;
  }
}
