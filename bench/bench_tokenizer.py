"""WordPiece tokenizers side by side: speed, and lines that differ from the original.

  python -m bench.bench_tokenizer [--original_dir=...] [--megabytes=4]

Every tokenizer reads the same two corpora, English (bench/common.build_corpus)
and mixed-language (common.build_mixed_corpus: man pages in 30 languages,
Greek and emoji lines), in batches of 1,024 lines, uncased, without [CLS] and
[SEP]; once with one thread, once with every core. Each runs in its own
process with its own peer's interpreter (bench/environments.py):

  original      google-research/bert FullTokenizer, line by line (one thread)
  hf_wordpiece  Hugging Face `tokenizers` BertWordPieceTokenizer.encode_batch
  hf_fast       `transformers` BertTokenizerFast (the same Rust code)
  tftext_fast   tensorflow-text FastBertTokenizer, in a tf.function
  tftext_bert   tensorflow-text BertTokenizer, in a tf.function
  keras_hub     keras_hub.tokenizers.BertTokenizer, in a tf.function
  tf_models     Model Garden's FastWordpieceBertTokenizer, in a tf.function
  ours          FullTokenizer.tokenize_to_ids_batch (compiled)

Threads: RAYON_NUM_THREADS for Hugging Face, TensorFlow's intra- and inter-op
threads for the in-graph tokenizers, `num_threads` for ours. Prints a
Markdown table (MB/s, lines whose ids differ from the original's, and our
speed over each) and saves it as bench/output/tokenizers.{md,json};
bench/run.py adds it to results.md.
"""

import json
import os
import time

import numpy as np

from bench import common
from bench import environments

BATCH = 1024
# tokenizer -> the peer environment it runs in.
TOKENIZERS = {"original": "original", "hf_wordpiece": "hf", "hf_fast": "hf",
              "tftext_fast": "ours", "tftext_bert": "ours", "keras_hub": "keras_hub",
              "tf_models": "tf_models", "ours": "ours"}
CORPORA = ("english", "mixed")


def _read_lines(path):
  with open(path, encoding="utf-8") as f:
    lines = [line.rstrip("\n") for line in f if line.strip()]
  return lines, sum(len(l.encode("utf-8")) for l in lines) / 1e6


def _batches(lines):
  return [lines[i:i + BATCH] for i in range(0, len(lines), BATCH)]


def _graph_runner(tokenize, threads):
  """(run, rows) for `tokenize` (lines -> ragged ids [lines, (ids)]) as a
  tf.function with `threads` TensorFlow threads."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  del threads  # Set by `worker` before TensorFlow starts.
  tokenize = tf.function(tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
  return (lambda batches: [tokenize(tf.constant(batch)) for batch in batches],
          lambda results: [row for r in results for row in r.to_list()])


def make_runner(name, vocab_file, threads, original_dir):
  """(run(batches) -> results, rows(results) -> id lists) for one tokenizer;
  made (vocabulary loaded, graph traced) before the clock starts."""
  if name == "ours":
    from data_prep import tokenization  # pylint: disable=g-import-not-at-top
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    tokenizer.compile_after_characters = 0  # The compiled path from the first batch,
    tokenizer.tokenize_to_ids_batch(["warm up"])  # loaded here with its tables.

    def run(batches):
      return [tokenizer.tokenize_to_ids_batch(b, num_threads=threads) for b in batches]

    def rows(results):
      return [f[s[i]:s[i + 1]].tolist() for f, s in results for i in range(len(s) - 1)]
    return run, rows
  if name == "original":
    code_dir = common.original_code_dir(original_dir)
    (tokenization,) = common.import_original(code_dir, "tokenization")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    return (lambda batches: [[tokenizer.convert_tokens_to_ids(tokenizer.tokenize(l))
                              for l in b] for b in batches],
            lambda results: [r for b in results for r in b])
  if name == "hf_wordpiece":
    from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top
    tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=True, clean_text=True,
                                       handle_chinese_chars=True, strip_accents=True)
    return (lambda batches: [tokenizer.encode_batch(b, add_special_tokens=False)
                             for b in batches],
            lambda results: [e.ids for r in results for e in r])
  if name == "hf_fast":
    from transformers import BertTokenizerFast  # pylint: disable=g-import-not-at-top
    tokenizer = BertTokenizerFast(vocab_file, do_lower_case=True)
    return (lambda batches: [tokenizer(b, add_special_tokens=False)["input_ids"]
                             for b in batches],
            lambda results: [r for b in results for r in b])
  if name in ("tftext_fast", "tftext_bert"):
    import tensorflow_text as text  # pylint: disable=g-import-not-at-top
    if name == "tftext_fast":
      with open(vocab_file, encoding="utf-8") as f:
        vocab = [line.rstrip("\n").rstrip("\r") for line in f]
      tokenizer = text.FastBertTokenizer(vocab=vocab, lower_case_nfd_strip_accents=True)
      tokenize = tokenizer.tokenize
    else:
      tokenizer = text.BertTokenizer(vocab_file, lower_case=True)
      tokenize = lambda x: tokenizer.tokenize(x).merge_dims(1, 2)
    return _graph_runner(tokenize, threads)
  if name == "keras_hub":
    import keras_hub  # pylint: disable=g-import-not-at-top
    return _graph_runner(keras_hub.tokenizers.BertTokenizer(vocabulary=vocab_file,
                                                            lowercase=True), threads)
  if name == "tf_models":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    from official.nlp.modeling import layers  # pylint: disable=g-import-not-at-top
    layer = layers.FastWordpieceBertTokenizer(vocab_file=vocab_file, lower_case=True)
    return _graph_runner(lambda x: layer(x).merge_dims(1, 2), threads)
  raise ValueError("unknown tokenizer %r" % name)


def worker(args):
  """Times one tokenizer on each corpus; saves its ids; reports MB/s."""
  if args.tokenizer in ("hf_wordpiece", "hf_fast"):
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if args.threads > 1 else "false"
  if args.tokenizer in ("tftext_fast", "tftext_bert", "keras_hub", "tf_models"):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
  run, rows = make_runner(args.tokenizer, args.vocab_file, args.threads, args.original_dir)
  result = {}
  for corpus in args.corpus:
    name, path = corpus.split("=", 1)
    lines, megabytes = _read_lines(path)
    batches = _batches(lines)
    run(batches[:1])  # A first batch builds what is built lazily (graphs).
    start = time.perf_counter()
    results = run(batches)
    seconds = time.perf_counter() - start
    ids = rows(results)
    np.savez(os.path.join(args.ids_dir, "%s-%s.npz" % (args.tokenizer, name)),
             lengths=np.array([len(r) for r in ids], np.int64),
             ids=np.array([i for r in ids for i in r], np.int64))
    result[name] = megabytes / seconds
  common.report_result(result)


def _differing_lines(path, reference):
  def rows(p):
    data = np.load(p)
    return np.split(data["ids"], np.cumsum(data["lengths"])[:-1])
  a, b = rows(path), rows(reference)
  return sum(not np.array_equal(x, y) for x, y in zip(a, b)), len(b)


def measure(work_dir, vocab_file, original_dir, megabytes, names=None):
  """Runs every tokenizer whose environment is installed (or ours); returns
  {tokenizer: {"english_1": MB/s, ..., "english_differ": lines}}."""
  corpora = {"english": common.build_corpus(os.path.join(work_dir, "english.txt"), megabytes),
             "mixed": common.build_mixed_corpus(os.path.join(work_dir, "mixed.txt"), megabytes)}
  cores = os.cpu_count() or 1
  figures = {}
  for name in names or TOKENIZERS:
    peer = TOKENIZERS[name]
    if peer == "original" and not original_dir:
      continue
    if peer != "ours" and not environments.installed(peer):
      print("%s: skipped (its environment is not installed)" % name)
      continue
    figures[name] = {}
    for threads in ([1] if name == "original" else [1, cores]):
      ids_dir = os.path.join(work_dir, "threads%d" % threads)
      os.makedirs(ids_dir, exist_ok=True)
      cmd = [environments.interpreter(peer), "-m", "bench.bench_tokenizer", "--worker",
             "--tokenizer=" + name, "--threads=%d" % threads, "--vocab_file=" + vocab_file,
             "--ids_dir=" + ids_dir] + ["--corpus=%s=%s" % kv for kv in corpora.items()]
      result = common.run_worker(cmd, "tokenize/%s/%d" % (name, threads),
                                 original_dir if name == "original" else None) or {}
      for corpus, value in result.items():
        figures[name]["%s_%d" % (corpus, 1 if threads == 1 else 0)] = value
      print("%-13s %d thread(s): %s" % (name, threads, ", ".join(
          "%s %.2f MB/s" % kv for kv in result.items()) or "failed"), flush=True)
  reference_dir = os.path.join(work_dir, "threads1")
  for name in figures:
    for corpus in CORPORA:
      ours, theirs = (os.path.join(reference_dir, "%s-%s.npz" % (n, corpus))
                      for n in (name, "original"))
      if os.path.exists(ours) and os.path.exists(theirs):
        differ, lines = _differing_lines(ours, theirs)
        figures[name][corpus + "_differ"] = differ
        figures[name]["lines_" + corpus] = lines
  return figures


def table(figures):
  """Markdown: MB/s per corpus and thread count, lines differing from the
  original, and ours over each (one thread, all cores)."""
  head = ["tokenizer", "English 1 thread", "mixed 1 thread", "English all cores",
          "mixed all cores", "lines differing (English / mixed)",
          "ours vs it, 1 thread (English / mixed)"]
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  ours = figures.get("ours", {})

  def cell(values, key):
    return "%.2f" % values[key] if key in values else "n/a"

  for name, values in figures.items():
    differ = " / ".join(str(values.get(c + "_differ", "n/a")) for c in CORPORA)
    ratio = " / ".join("%.1fx" % (ours[c + "_1"] / values[c + "_1"])
                       if c + "_1" in ours and c + "_1" in values else "n/a" for c in CORPORA)
    lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
        name, cell(values, "english_1"), cell(values, "mixed_1"), cell(values, "english_0"),
        cell(values, "mixed_0"), differ, "" if name == "ours" else ratio))
  some = next(iter(figures.values()), {})
  return "\n".join(lines) + "\n\nMB/s of UTF-8 text; lines of %s English and %s mixed." % (
      some.get("lines_english", "?"), some.get("lines_mixed", "?"))


def main():
  parser = common.argument_parser(megabytes=4.0)
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--tokenizer")
  parser.add_argument("--threads", type=int, default=1)
  parser.add_argument("--corpus", action="append", default=[])
  parser.add_argument("--ids_dir")
  parser.add_argument("--only", default="", help="comma-separated tokenizer names")
  args = parser.parse_args()
  if args.worker:
    worker(args)
    return
  import tempfile  # pylint: disable=g-import-not-at-top
  os.makedirs(environments.OUTPUT_DIR, exist_ok=True)
  work_dir = tempfile.mkdtemp(prefix="tokenizers_", dir=environments.OUTPUT_DIR)
  names = [n for n in args.only.split(",") if n] or None
  figures = measure(work_dir, args.vocab_file, args.original_dir, args.megabytes, names)
  markdown = table(figures)
  print("\n" + markdown)
  common.write_text(os.path.join(environments.OUTPUT_DIR, "tokenizers.md"), markdown + "\n")
  common.write_text(os.path.join(environments.OUTPUT_DIR, "tokenizers.json"),
                    json.dumps(figures, indent=1))
  common.cleanup(work_dir)


if __name__ == "__main__":
  main()
