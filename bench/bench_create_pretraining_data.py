"""Pre-training data generation: ours vs the original script, same corpus and flags.

  python -m bench.bench_create_pretraining_data --original_dir=/path/to/bert

Both programs run as separate processes on a real-text corpus (default 10 MB)
with the original's default flags; we report wall time, peak resident memory
(proportional set size of the process and its children) and check that the outputs are identical
feature by feature.
"""

import os
import sys
import tempfile

import numpy as np

from bench import common


def _features(path, max_seq_length, max_predictions):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from data_prep.pretraining import records as pretraining_records  # pylint: disable=g-import-not-at-top
  spec = pretraining_records.name_to_features(max_seq_length, max_predictions)
  columns = {k: [] for k in spec}
  for batch in tf.data.TFRecordDataset(path).batch(4096):
    parsed = tf.io.parse_example(batch, spec)
    for k in spec:
      columns[k].append(parsed[k].numpy())
  return {k: np.concatenate(v) for k, v in columns.items()}


def same_records(path, other_path, max_seq_length, max_predictions):
  """Whether two record files hold the same features, in the same order."""
  a = _features(path, max_seq_length, max_predictions)
  b = _features(other_path, max_seq_length, max_predictions)
  return all(a[k].shape == b[k].shape and np.array_equal(a[k], b[k]) for k in a)


def main():
  parser = common.argument_parser(megabytes=10.0)
  parser.add_argument("--workdir", default=None)
  args = parser.parse_args()

  workdir = args.workdir or tempfile.mkdtemp(prefix="bench_cpd_")
  os.makedirs(workdir, exist_ok=True)
  corpus = common.build_corpus(os.path.join(workdir, "corpus.txt"), args.megabytes)
  print("corpus: %.1f MB at %s" % (os.path.getsize(corpus) / 1e6, corpus))
  flags = ["--input_file=" + corpus, "--vocab_file=" + args.vocab_file,
           "--do_lower_case=True", "--max_seq_length=128",
           "--max_predictions_per_seq=20", "--masked_lm_prob=0.15",
           "--random_seed=12345", "--dupe_factor=10"]

  ours_out = os.path.join(workdir, "ours.tfrecord")
  ours_s, ours_mb = common.run_measured(
      [sys.executable, "create_pretraining_data.py",
       "--output_file=" + ours_out] + flags, common.REPO_ROOT,
      os.path.join(workdir, "ours.log"))
  print("ours:     %7.1f s  peak %6.0f MB" % (ours_s, ours_mb))

  original_dir = common.original_code_dir(args.original_dir)
  if not original_dir:
    print("original: skipped (pass --original_dir=<google-research/bert checkout>)")
    return
  orig_out = os.path.join(workdir, "original.tfrecord")
  orig_s, orig_mb = common.run_measured(
      [sys.executable, "create_pretraining_data.py", "--output_file=" + orig_out] + flags,
      original_dir, os.path.join(workdir, "original.log"))
  common.cleanup(original_dir)
  print("original: %7.1f s  peak %6.0f MB" % (orig_s, orig_mb))

  print("records identical: %s" % same_records(ours_out, orig_out, 128, 20))
  print("wall time: original / ours = %.1fx" % (orig_s / ours_s))
  print("peak memory: ours / original = %.2f" % (ours_mb / orig_mb))


if __name__ == "__main__":
  main()
