#include "args.h"

#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

#include "dictionary.h"

namespace bisent2vec {

namespace {

int64_t parse_int(const std::string& flag, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0) {
    throw InputError(flag + " expects an integer, got '" + value + "'");
  }
  return static_cast<int64_t>(v);
}

double parse_real(const std::string& flag, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno != 0) {
    throw InputError(flag + " expects a number, got '" + value + "'");
  }
  return v;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

// The training settings' flags, every one required: no defaults beside the config schema's.
const char* const kSettingFlags[] = {
    "-dim",      "-lr",    "-neg", "-minCount", "-maxVocabSize", "-wordNgrams", "-bucket",
    "-dropoutK", "-epoch", "-t",   "-thread",   "-seed",         "-lrUpdateRate"};

}  // namespace

std::string train_usage() {
  const Args d{};
  std::ostringstream out;
  out << "usage: bisent2vec train -input FILE -output PREFIX -lang1 CODE -lang2 CODE SETTINGS\n"
      << "\n"
      << "FILE holds one sentence pair per line: lang1 tokens, a tab, lang2 tokens.\n"
      << "Writes PREFIX.bin (model), PREFIX.CODE.vec (one per language), PREFIX.ngrams.bin\n"
      << "(with -wordNgrams > 1) and PREFIX.json (statistics).\n"
      << "\n"
      << "SETTINGS, every one required (xlsent passes its config's `bisent2vec` block):\n"
      << "  -dim N            vector size\n"
      << "  -lr X             initial learning rate, decaying linearly to 0\n"
      << "  -neg N            negatives per update\n"
      << "  -minCount N       minimal count of a word (per language)\n"
      << "  -maxVocabSize N   keep only the N most frequent words, 0: all\n"
      << "  -wordNgrams N     longest word n-gram\n"
      << "  -bucket N         hash buckets of the n-grams\n"
      << "  -dropoutK N       tokens whose n-grams are dropped per context\n"
      << "  -epoch N          passes over the data\n"
      << "  -t X              subsampling threshold\n"
      << "  -thread N         Hogwild threads\n"
      << "  -seed N           random seed\n"
      << "  -lrUpdateRate N   tokens between learning-rate updates\n"
      << "\n"
      << "Options:\n"
      << "  -resume FILE.bin  continue from a model: its vocabulary, vectors and shape\n"
      << "  -verbose N        0 errors, 1 summary, 2 progress [" << d.verbose << "]\n";
  return out.str();
}

Args parse_train_args(int argc, char** argv, int first) {
  Args a{};
  std::set<std::string> given;
  for (int i = first; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw InputError(flag + " needs a value\n\n" + train_usage());
    const std::string v = argv[i + 1];
    given.insert(flag);
    if (flag == "-input") a.input = v;
    else if (flag == "-output") a.output = v;
    else if (flag == "-resume") a.resume = v;
    else if (flag == "-lang1") a.lang[0] = v;
    else if (flag == "-lang2") a.lang[1] = v;
    else if (flag == "-dim") a.dim = static_cast<int>(parse_int(flag, v));
    else if (flag == "-lr") a.lr = parse_real(flag, v);
    else if (flag == "-neg") a.neg = static_cast<int>(parse_int(flag, v));
    else if (flag == "-minCount") a.min_count = parse_int(flag, v);
    else if (flag == "-maxVocabSize") a.max_vocab_size = parse_int(flag, v);
    else if (flag == "-wordNgrams") a.word_ngrams = static_cast<int>(parse_int(flag, v));
    else if (flag == "-bucket") a.bucket = parse_int(flag, v);
    else if (flag == "-dropoutK") a.dropout_k = static_cast<int>(parse_int(flag, v));
    else if (flag == "-epoch") a.epoch = static_cast<int>(parse_int(flag, v));
    else if (flag == "-t") a.t = parse_real(flag, v);
    else if (flag == "-thread") a.threads = static_cast<int>(parse_int(flag, v));
    else if (flag == "-seed") a.seed = static_cast<uint64_t>(parse_int(flag, v));
    else if (flag == "-lrUpdateRate") a.lr_update_rate = static_cast<int>(parse_int(flag, v));
    else if (flag == "-verbose") a.verbose = static_cast<int>(parse_int(flag, v));
    else if (flag == "-negTableSize") a.negative_table_size = parse_int(flag, v);
    else throw InputError("unknown option " + flag + "\n\n" + train_usage());
  }
  std::string missing;
  for (const char* flag : kSettingFlags) {
    if (given.count(flag) == 0) missing += (missing.empty() ? "" : " ") + std::string(flag);
  }
  require(missing.empty(), "missing setting(s): " + missing + "\n\n" + train_usage());
  validate(a);
  return a;
}

void validate(const Args& a) {
  require(!a.input.empty(), "-input is required\n\n" + train_usage());
  require(!a.output.empty(), "-output is required\n\n" + train_usage());
  for (int s = 0; s < 2; ++s) {
    const std::string flag = s == 0 ? "-lang1" : "-lang2";
    require(!a.lang[s].empty(), flag + " is required (a language code such as en)");
    require(a.lang[s].find_first_of(" \t\n/\\.") == std::string::npos,
            flag + " '" + a.lang[s] + "' must be a plain code: no spaces, dots or slashes");
  }
  require(a.lang[0] != a.lang[1], "-lang1 and -lang2 are both '" + a.lang[0] +
                                      "': a bilingual model needs two languages");
  require(a.dim >= 1, "-dim must be at least 1");
  require(a.lr > 0, "-lr must be positive");
  require(a.neg >= 1, "-neg must be at least 1");
  require(a.min_count >= 1, "-minCount must be at least 1");
  require(a.max_vocab_size >= 0, "-maxVocabSize must be 0 (no limit) or positive");
  require(a.word_ngrams >= 1, "-wordNgrams must be at least 1");
  require(a.word_ngrams == 1 || a.bucket >= 1, "-bucket must be at least 1 with -wordNgrams > 1");
  require(a.dropout_k >= 0, "-dropoutK must be 0 or more");
  require(a.epoch >= 1, "-epoch must be at least 1");
  require(a.t > 0, "-t must be positive");
  require(a.threads >= 1, "-thread must be at least 1");
  require(a.lr_update_rate >= 1, "-lrUpdateRate must be at least 1");
  require(a.negative_table_size >= 1, "-negTableSize must be at least 1");
}

}  // namespace bisent2vec
