"""Tokenization throughput of one peer: a worker of bench/run.py.

  <peer's python> bench/bench_tokenizer.py --peer=hf --corpus=corpus.txt \\
      --vocab_file=vocab.txt --ids_file=hf.npz [--original_dir=...]

Reads the corpus's non-empty lines (up to --megabytes), turns them into
WordPiece ids with the peer's BERT tokenizer (uncased, no [CLS]/[SEP]),
reports MB/s, and saves the ids so that the driver can count the lines where
a peer's tokens differ from ours:
  original   the original FullTokenizer, line by line;
  ours       data_prep.tokenization.FullTokenizer.tokenize_to_ids_batch;
  hf         Hugging Face `tokenizers` BertWordPieceTokenizer.encode_batch (Rust,
             using every core);
  keras_hub  keras_hub.tokenizers.BertTokenizer (tensorflow-text, in graph);
  tf_models  official.nlp.modeling.layers.FastWordpieceBertTokenizer
             (tensorflow-text's FastWordpieceTokenizer, in graph).
The in-graph tokenizers get batches of 4096 lines.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # pylint: disable=g-import-not-at-top

GRAPH_BATCH = 4096


def _read_lines(path, megabytes):
  lines, size = [], 0
  with open(path, encoding="utf-8") as f:
    for line in f:
      if size >= megabytes * 1e6:
        break
      if line.strip():
        lines.append(line.rstrip("\n"))
        size += len(line.encode("utf-8"))
  return lines, size / 1e6


def _in_graph(tokenize, lines):
  """Runs `tokenize` (lines -> ragged ids) as one graph over batches;
  returns id rows. (Eagerly, keras-hub's tokenizer returns Python lists.)"""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tokenize = tf.function(tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
  tokenize(tf.constant(lines[:8]))  # Trace and build once.
  start = time.perf_counter()
  batches = [tokenize(tf.constant(lines[i:i + GRAPH_BATCH]))
             for i in range(0, len(lines), GRAPH_BATCH)]
  seconds = time.perf_counter() - start
  return [row for b in batches for row in b.to_list()], seconds


def tokenize(peer, lines, vocab_file, original_dir):
  """Returns (id rows, seconds) for `peer`."""
  if peer == "ours":
    from data_prep import tokenization  # pylint: disable=g-import-not-at-top
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    start = time.perf_counter()
    flat, splits = tokenizer.tokenize_to_ids_batch(lines)
    seconds = time.perf_counter() - start
    return [flat[splits[i]:splits[i + 1]].tolist() for i in range(len(lines))], seconds
  if peer == "original":
    code_dir = common.original_code_dir(original_dir)
    sys.path.insert(0, code_dir)
    import tokenization  # pylint: disable=g-import-not-at-top
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    start = time.perf_counter()
    rows = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(l)) for l in lines]
    seconds = time.perf_counter() - start
    common.cleanup(code_dir)
    return rows, seconds
  if peer == "hf":
    from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top
    tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=True, clean_text=True,
                                       handle_chinese_chars=True, strip_accents=True)
    start = time.perf_counter()
    encodings = tokenizer.encode_batch(lines, add_special_tokens=False)
    seconds = time.perf_counter() - start
    return [e.ids for e in encodings], seconds
  if peer == "keras_hub":
    import keras_hub  # pylint: disable=g-import-not-at-top
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab_file, lowercase=True)
    return _in_graph(tokenizer, lines)
  if peer == "tf_models":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    from official.nlp.modeling import layers  # pylint: disable=g-import-not-at-top
    layer = layers.FastWordpieceBertTokenizer(vocab_file=vocab_file, lower_case=True)
    # [lines, words, pieces] -> [lines, pieces]
    return _in_graph(lambda x: layer(x).merge_dims(1, 2), lines)
  raise ValueError("unknown peer %r" % peer)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--peer", required=True)
  parser.add_argument("--corpus", required=True)
  parser.add_argument("--vocab_file", required=True)
  parser.add_argument("--megabytes", type=float, default=1e9)
  parser.add_argument("--ids_file", required=True)
  parser.add_argument("--original_dir")
  args = parser.parse_args()
  lines, size = _read_lines(args.corpus, args.megabytes)
  rows, seconds = tokenize(args.peer, lines, args.vocab_file, args.original_dir)
  lengths = np.array([len(r) for r in rows], np.int64)
  np.savez(args.ids_file, lengths=lengths,
           ids=np.array([i for r in rows for i in r], np.int64))
  common.report_result({"mb_per_s": size / seconds, "megabytes": size, "lines": len(lines)})


if __name__ == "__main__":
  main()
