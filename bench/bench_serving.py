"""Serving latency of the exported classifier: raw text vs ready features.

  python bench/bench_serving.py [--size=base] [--steps=200] [--repeats=3]

Exports a sentence-pair `modeling.BertClassifier` (random weights, `--size`
as bench_model.py) with `serving.classifier.export_classifier`, as
run_classifier.py --export_dir does, then loads the SavedModel in a fresh
process that imports only TensorFlow and tensorflow-text, as TF Serving
would, and times at batch 1, on one MRPC-like pair padded to
--max_seq_length:
  serving_default  raw text in (tokenization + model);
  serve_features   the same pair's features, tokenized beforehand;
  tokenize         tokenization alone.
Each figure is the median of `--steps` calls after warm-up; with
`--repeats=N` the signatures are timed in N interleaved rounds and each keeps
its best (background noise on a shared machine hits some rounds, not all).
The target: raw text costs at most 10% more than features.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
TARGET_OVERHEAD = 10.0  # percent
SIGNATURES = ("serving_default", "serve_features", "tokenize")

# A paraphrase pair in the style of MRPC's news sentences, 26 words each.
TEXT_A = ("The company said on Tuesday that quarterly revenue rose 12 percent to "
          "$4.3 billion, helped by strong demand for its cloud software in Europe "
          "and Asia.")
TEXT_B = ("Quarterly sales climbed 12 percent to $4.3 billion as European and Asian "
          "customers bought more of its cloud software, the company announced "
          "Tuesday in a statement.")


def export_random_classifier(args, export_dir):
  """A random-weight classifier of `--size`, exported as run_classifier does."""
  sys.path[:0] = [BENCH_DIR, REPO_ROOT]
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # Before TensorFlow loads.
  import bench_model  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  from serving import classifier as serving_classifier  # pylint: disable=g-import-not-at-top
  with open(args.vocab_file, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  config = modeling.BertConfig.from_dict(
      dict(bench_model.config_dict(args.size), vocab_size=vocab_size))
  model = modeling.BertClassifier(config, num_labels=2)
  serving_classifier.export_classifier(model, export_dir, args.vocab_file, do_lower_case=True,
                                       max_seq_length=args.max_seq_length,
                                       label_list=["0", "1"])


# ---------------------------------------------------------------- worker
# Runs in the fresh process: TensorFlow and tensorflow-text only, so no
# import of bench_model (its `common` imports this project's code).


def median_seconds(call, warmup, steps):
  for _ in range(warmup):
    call()
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def worker(args):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401 pylint: disable=g-import-not-at-top,unused-import
  signatures = tf.saved_model.load(args.export_dir).signatures
  text = {"text_a": tf.constant([TEXT_A]), "text_b": tf.constant([TEXT_B])}
  features = signatures["tokenize"](**text)
  if features["input_ids"].shape != (1, args.max_seq_length):
    raise ValueError("tokenize gave shape %s" % features["input_ids"].shape)
  inputs = {"serving_default": text, "serve_features": features, "tokenize": text}

  def caller(name):
    # A client gets numpy arrays back: fetching them is part of a call.
    return lambda: {k: v.numpy() for k, v in signatures[name](**inputs[name]).items()}
  best = {}
  for _ in range(args.repeats):
    for name in SIGNATURES:
      seconds = median_seconds(caller(name), max(5, args.steps // 10), args.steps)
      best[name] = min(seconds, best.get(name, seconds))
  ours = sorted(m for m in sys.modules
                if m.split(".")[0] in ("modeling", "data_prep", "common", "bench_model"))
  if ours:
    raise RuntimeError("The serving process imported project modules: %s" % ours)
  tokens = int(features["input_mask"].numpy().sum())
  print("RESULT " + json.dumps({"seconds": best, "tokens": tokens}))


# ---------------------------------------------------------------- driver


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--size", default="base", choices=["tiny", "mini", "small", "base"])
  parser.add_argument("--vocab_file", default=os.path.join(
      REPO_ROOT, "tests", "data", "vocab", "bert_uncased_vocab.txt"))
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--steps", type=int, default=200)
  parser.add_argument("--repeats", type=int, default=1,
                      help="Interleaved rounds; each signature keeps its best.")
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--export_dir")
  args = parser.parse_args()
  if args.worker:
    return worker(args)

  with tempfile.TemporaryDirectory() as scratch:
    export_dir = os.path.join(scratch, "export")
    export_random_classifier(args, export_dir)
    # Outside the repository, with no PYTHONPATH: the project is not importable.
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", "--export_dir=" + export_dir,
         "--max_seq_length=%d" % args.max_seq_length, "--steps=%d" % args.steps,
         "--repeats=%d" % args.repeats],
        cwd=scratch, capture_output=True, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
  lines = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
  if result.returncode or not lines:
    sys.exit("The serving process failed:\n" + result.stderr[-3000:])
  report = json.loads(lines[-1][7:])
  ms = {k: 1000 * v for k, v in report["seconds"].items()}
  print("\nBERT-%s classifier SavedModel, batch 1, one sentence pair (%d of %d "
        "positions real), median ms per call:" % (args.size, report["tokens"],
                                                 args.max_seq_length))
  for name in SIGNATURES:
    print("  %-16s %8.2f ms" % (name, ms[name]))
  overhead = 100 * (ms["serving_default"] / ms["serve_features"] - 1)
  print("Raw text over features: %+.1f%% (target: at most +%.0f%%: %s)" % (
      overhead, TARGET_OVERHEAD, "met" if overhead <= TARGET_OVERHEAD else "MISSED"))


if __name__ == "__main__":
  main()
