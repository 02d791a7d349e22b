"""Does a bfloat16 export give the float32 export's answers? Measured on real
dev sets, with fine-tuned weights (random weights answer about 0.5 for
everything, which says nothing about agreement).

  python bench/bench_bf16_agreement.py [--tasks=SST-2,MRPC]
      [--max_train_rows=16000] [--bert_config_file=...]

For each task: run_classifier.py fine-tunes the model (--bert_config_file,
BERT-Mini by default, from random weights: no released checkpoint here) on
the first --max_train_rows rows of ../shared/data/glue/<task>/train.tsv,
then exports it twice (--export_precision=float32 and bfloat16). Both
exports answer every dev row (raw text in, batches of --batch_size), and the
script prints: the share of dev labels the two agree on, the largest and
the mean difference of a class probability, and each export's dev accuracy.
Both exports answer as docs/serving.md advises serving an export,
with TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 (`--no-frozen_weights`: without it;
the fine-tuning runs never get it). Saves bench/output/bf16_agreement.json.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # pylint: disable=g-import-not-at-top,wrong-import-position

# Each task's dev.tsv: (text_a column, text_b column or None, label column).
COLUMNS = {"SST-2": (0, None, 1), "MRPC": (3, 4, 0), "CoLA": (3, None, 1),
           "RTE": (1, 2, -1)}
HEADER = {"SST-2": True, "MRPC": True, "CoLA": False, "RTE": True}
FROZEN_WEIGHTS = "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"


def rows(path, task, limit=None):
  with open(path, encoding="utf-8-sig") as f:
    table = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
  return table[int(HEADER[task]):][:limit]


def fine_tune_and_export(args, task, scratch):
  """The float32 and bfloat16 exports of one fine-tuned model."""
  data_dir = os.path.join(scratch, task, "data")
  os.makedirs(data_dir)
  source = os.path.join(common.SHARED_DATA, "glue", task)
  with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
    lines = f.readlines()
  with open(os.path.join(data_dir, "train.tsv"), "w", encoding="utf-8") as f:
    f.writelines(lines[:int(HEADER[task]) + args.max_train_rows])
  output_dir = os.path.join(scratch, task, "model")
  common_flags = [sys.executable, "run_classifier.py", "--task_name=" + task,
                  "--data_dir=" + data_dir, "--vocab_file=" + args.vocab_file,
                  "--bert_config_file=" + args.bert_config_file,
                  "--output_dir=" + output_dir, "--max_seq_length=128"]
  commands = [common_flags + ["--do_train", "--train_batch_size=32",
                              "--learning_rate=%g" % args.learning_rate,
                              "--num_train_epochs=%g" % args.num_train_epochs]]
  exports = {}
  for precision in ("float32", "bfloat16"):
    exports[precision] = os.path.join(scratch, task, precision, "1")
    commands.append(common_flags + ["--export_dir=" + exports[precision],
                                    "--export_precision=" + precision])
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop(FROZEN_WEIGHTS, None)  # Training must see its weights change.
  for command in commands:
    result = subprocess.run(command, cwd=common.REPO_ROOT, capture_output=True, text=True,
                            env=env)
    if result.returncode:
      sys.exit("%s failed:\n%s" % (" ".join(command[1:3]), result.stderr[-3000:]))
  return exports


def answers(export_dir, texts_a, texts_b, batch_size):
  """Class probabilities of every row, float32 numpy."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401 pylint: disable=g-import-not-at-top,unused-import
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]
  parts = []
  for start in range(0, len(texts_a), batch_size):
    inputs = {"text_a": tf.constant(texts_a[start:start + batch_size])}
    if texts_b is not None:
      inputs["text_b"] = tf.constant(texts_b[start:start + batch_size])
    parts.append(serve(**inputs)["probabilities"].numpy())
  return np.concatenate(parts)


def main():
  parser = common.real_data_parser(__doc__.split("\n")[0], "bf16_agreement.json")
  parser.add_argument("--tasks", default="SST-2,MRPC")
  parser.add_argument("--max_train_rows", type=int, default=16000)
  parser.add_argument("--learning_rate", type=float, default=1e-4)
  parser.add_argument("--num_train_epochs", type=float, default=1.0)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--frozen_weights", action=argparse.BooleanOptionalAction, default=True)
  args = parser.parse_args()
  if args.frozen_weights:  # Read by TensorFlow at this process's first matrix product.
    os.environ[FROZEN_WEIGHTS] = "1"
  results = {}
  with tempfile.TemporaryDirectory() as scratch:
    for task in args.tasks.split(","):
      exports = fine_tune_and_export(args, task, scratch)
      dev = rows(os.path.join(common.SHARED_DATA, "glue", task, "dev.tsv"), task)
      a, b, label = COLUMNS[task]
      texts_a = [r[a] for r in dev]
      texts_b = [r[b] for r in dev] if b is not None else None
      gold = np.array([r[label] for r in dev])
      labels = sorted(set(gold))  # GLUE's label lists are sorted ("0" < "1", "entailment" < ...)
      probabilities = {p: answers(d, texts_a, texts_b, args.batch_size)
                       for p, d in exports.items()}
      f32, bf16 = probabilities["float32"], probabilities["bfloat16"]
      difference = np.abs(f32 - bf16)
      results[task] = {
          "dev_rows": len(dev),
          "labels_equal": float(np.mean(f32.argmax(-1) == bf16.argmax(-1))),
          "labels_different": int(np.sum(f32.argmax(-1) != bf16.argmax(-1))),
          "max_probability_difference": float(difference.max()),
          "mean_probability_difference": float(difference.mean()),
          "accuracy_float32": float(np.mean(np.array(labels)[f32.argmax(-1)] == gold)),
          "accuracy_bfloat16": float(np.mean(np.array(labels)[bf16.argmax(-1)] == gold)),
      }
      r = results[task]
      print("%-6s %4d dev rows: labels equal %.2f%% (%d differ); probability difference "
            "max %.4f, mean %.5f; dev accuracy float32 %.4f, bfloat16 %.4f" % (
                task, r["dev_rows"], 100 * r["labels_equal"], r["labels_different"],
                r["max_probability_difference"], r["mean_probability_difference"],
                r["accuracy_float32"], r["accuracy_bfloat16"]), flush=True)
  common.write_text(args.output, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
  main()
