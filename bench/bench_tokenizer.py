"""Tokenizer throughput, side by side, on several MB of real English.

  python bench/bench_tokenizer.py --original_dir=/path/to/google-research/bert

Compares (one process each, same lines, same vocabulary):
  original   the original FullTokenizer (if --original_dir is given);
  ours       data_prep.tokenization.FullTokenizer.tokenize_to_ids_batch;
  hf         Hugging Face `tokenizers` BertWordPieceTokenizer (Rust);
  tftext     tensorflow-text FastBertTokenizer (in-graph, batched).
Prints MB/s, the ratio to the original, and how many lines differ from ours
(ours is checked equal to the original on the lines the original ran on).
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # pylint: disable=g-import-not-at-top

from data_prep import tokenization  # pylint: disable=g-import-not-at-top


def _timed(fn):
  start = time.perf_counter()
  result = fn()
  return result, time.perf_counter() - start


def _rows(flat, splits):
  return [flat[splits[i]:splits[i + 1]].tolist() for i in range(len(splits) - 1)]


def main():
  parser = common.argument_parser(megabytes=5.0)
  parser.add_argument("--original_megabytes", type=float, default=1.0,
                      help="The original is slow: time it on this prefix.")
  args = parser.parse_args()

  corpus = common.build_corpus(os.path.join(tempfile.mkdtemp(), "corpus.txt"),
                               args.megabytes)
  with open(corpus, encoding="utf-8") as f:
    lines = [l for l in f.read().split("\n") if l.strip()]
  size = sum(len(l.encode("utf-8")) + 1 for l in lines) / 1e6
  print("corpus: %.2f MB, %d lines" % (size, len(lines)))

  results = {}
  ours_tok = tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
  (flat, splits), seconds = _timed(lambda: ours_tok.tokenize_to_ids_batch(lines))
  ours = _rows(flat, splits)
  results["ours"] = size / seconds

  original_dir = common.original_code_dir(args.original_dir)
  if original_dir:
    sys.path.insert(0, original_dir)
    import tokenization as original  # pylint: disable=g-import-not-at-top
    orig_tok = original.FullTokenizer(args.vocab_file, do_lower_case=True)
    prefix, prefix_mb = [], 0.0
    for line in lines:
      if prefix_mb >= args.original_megabytes:
        break
      prefix.append(line)
      prefix_mb += (len(line.encode("utf-8")) + 1) / 1e6
    orig, seconds = _timed(lambda: [
        orig_tok.convert_tokens_to_ids(orig_tok.tokenize(l)) for l in prefix])
    results["original"] = prefix_mb / seconds
    differ = sum(a != b for a, b in zip(orig, ours))
    print("ours vs original: %d of %d lines differ" % (differ, len(prefix)))
    common.cleanup(original_dir)

  try:
    from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top
    hf = BertWordPieceTokenizer(args.vocab_file, lowercase=True, clean_text=True,
                                handle_chinese_chars=True, strip_accents=True)
    encodings, seconds = _timed(lambda: hf.encode_batch(lines, add_special_tokens=False))
    results["hf"] = size / seconds
    differ = sum(e.ids != o for e, o in zip(encodings, ours))
    print("hf vs ours: %d of %d lines differ" % (differ, len(lines)))
  except ImportError:
    print("hf: `tokenizers` not installed (pip install -r bench/requirements.txt)")

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text as tf_text  # pylint: disable=g-import-not-at-top
  vocab = list(tokenization.load_vocab(args.vocab_file).keys())
  fast = tf_text.FastBertTokenizer(vocab=vocab, token_out_type=tf.int64,
                                   lower_case_nfd_strip_accents=True)
  fast.tokenize(tf.constant(lines[:10]))  # Build/trace once.

  def run_fast():
    out = []
    for i in range(0, len(lines), 4096):
      out.append(fast.tokenize(tf.constant(lines[i:i + 4096])))
    return out
  batches, seconds = _timed(run_fast)
  results["tftext"] = size / seconds
  fast_rows = [r for b in batches for r in b.to_list()]
  differ = sum(a != b for a, b in zip(fast_rows, ours))
  print("tftext FastBertTokenizer vs ours: %d of %d lines differ (%.2f%%)" %
        (differ, len(lines), 100.0 * differ / len(lines)))

  print("\n%-10s %8s %12s" % ("tokenizer", "MB/s", "x original"))
  base = results.get("original")
  for name in ("original", "ours", "hf", "tftext"):
    if name in results:
      ratio = "%.1f" % (results[name] / base) if base else "-"
      print("%-10s %8.2f %12s" % (name, results[name], ratio))
  if "hf" in results:
    print("ours / hf = %.2f" % (results["ours"] / results["hf"]))
  print("ours / tftext = %.2f" % (results["ours"] / results["tftext"]))


if __name__ == "__main__":
  main()
