"""What `make demo` learned, next to what guessing would score.

  python -m demo.report --demo_dir=demo_output --eval_examples=640

Reads the demo's outputs and prints, for pre-training, the masked-LM and
next-sentence accuracies beside the accuracy of always predicting the most
frequent masked token (and the commoner next-sentence label) of the same
evaluation instances; for fine-tuning, the dev accuracy beside always
answering the commoner label. Saves the pre-training loss curve, read from
the TensorBoard summaries, as a PNG.
"""

import argparse
import collections
import glob
import math
import os
import sys

from data_prep import tokenization
from plumbing import files
from tasks.classification import glue


def _results(path):
  with open(path, encoding="utf-8") as f:
    return dict(line.strip().split(" = ", 1) for line in f if " = " in line)


def pretraining_baselines(record_file, num_examples):
  """(most frequent masked token id, its share of the masked positions,
  share of the commoner next-sentence label) over the first records, which
  are the ones run_pretraining.py --do_eval reads."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  masked = collections.Counter()
  next_sentence = collections.Counter()
  for raw in tf.data.TFRecordDataset(record_file).take(num_examples):
    feature = tf.train.Example.FromString(raw.numpy()).features.feature
    ids = feature["masked_lm_ids"].int64_list.value
    weights = feature["masked_lm_weights"].float_list.value
    masked.update(i for i, w in zip(ids, weights) if w > 0)
    next_sentence.update(feature["next_sentence_labels"].int64_list.value)
  token, count = masked.most_common(1)[0]
  return token, count / sum(masked.values()), max(next_sentence.values()) / sum(
      next_sentence.values())


def majority_share(data_dir):
  """(label, share) of the commoner label of the MRPC-format dev set."""
  labels = collections.Counter(
      e.label for e in glue.MrpcProcessor().get_dev_examples(data_dir))
  label, count = labels.most_common(1)[0]
  return label, count / sum(labels.values())


# A fine-tuning run whose last training loss is above this share of the
# training labels' entropy (the loss of predicting their frequencies) learned
# nothing (docs/ablations.md).
STUCK_SHARE = 0.98


def label_entropy(task_name, data_dir):
  """The entropy (nats) of a task's training labels."""
  counts = collections.Counter(
      e.label for e in glue.get_processor(task_name).get_train_examples(data_dir))
  total = sum(counts.values())
  return -sum(c / total * math.log(c / total) for c in counts.values())


def fine_tuning_stuck(task_name, data_dir, run_dir):
  """(last training loss, label entropy, stuck) of the run_classifier.py run
  in `run_dir`: stuck when the loss ended above STUCK_SHARE of the entropy.
  At the demo's size some seeds leave a classifier at the majority class,
  pre-trained or not (docs/ablations.md)."""
  losses = training_losses(os.path.join(run_dir, "train"))
  if not losses:
    return None, None, False
  last, entropy = losses[max(losses)], label_entropy(task_name, data_dir)
  return last, entropy, last > STUCK_SHARE * entropy


def training_losses(summary_dir):
  """{step: loss} of a run's training summaries (<output_dir>/train)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.core.util import event_pb2  # pylint: disable=g-import-not-at-top
  points = {}
  for events in sorted(glob.glob(os.path.join(summary_dir, "events.out.tfevents.*"))):
    for raw in tf.data.TFRecordDataset(events):
      event = event_pb2.Event.FromString(raw.numpy())
      for value in event.summary.value:
        if value.tag == "loss":
          points[event.step] = float(tf.make_ndarray(value.tensor))
  return points


def loss_curve(summary_dir, png_file):
  """Plots the `loss` scalars of the training summaries; returns the points."""
  points = training_losses(summary_dir)
  steps = sorted(points)
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  figure, axes = pyplot.subplots(figsize=(6, 3.5), dpi=100)
  axes.plot(steps, [points[s] for s in steps], marker=".")
  axes.set_xlabel("training step")
  axes.set_ylabel("masked LM + next sentence loss")
  axes.set_title("Pre-training loss (make demo)")
  axes.grid(alpha=0.3)
  figure.tight_layout()
  with files.atomic_output(png_file, "wb") as f:
    figure.savefig(f, format="png")
  pyplot.close(figure)
  return [(s, points[s]) for s in steps]


def check_fine_tuning(demo_dir):
  """3 (and a line saying so) if the demo's fine-tuning learned nothing, else 0."""
  last, entropy, stuck = fine_tuning_stuck("MRPC", os.path.join(demo_dir, "pairs"),
                                           os.path.join(demo_dir, "classifier_output"))
  if not stuck:
    return 0
  print("  Fine-tuning learned nothing: training loss %.3f, the labels' entropy %.3f "
        "(at this size some seeds stay at the majority class, pre-trained or not)." % (
            last, entropy))
  return 3


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--demo_dir", default="demo_output")
  parser.add_argument("--eval_examples", type=int,
                      help="max_eval_steps * eval_batch_size of the pre-training eval.")
  parser.add_argument("--check_fine_tuning", action="store_true",
                      help="Only say whether the fine-tuning run learned anything; exit "
                           "status 3 if it did not (make demo then runs it again with the "
                           "next seed).")
  args = parser.parse_args()
  d = args.demo_dir
  if args.check_fine_tuning:
    return check_fine_tuning(d)
  if args.eval_examples is None:
    parser.error("--eval_examples is required.")
  vocab = tokenization.load_vocab(os.path.join(d, "vocab.txt"))
  token_of = {i: t for t, i in vocab.items()}
  pretraining = _results(os.path.join(d, "pretraining_output", "eval_results.txt"))
  token, token_share, nsp_share = pretraining_baselines(
      os.path.join(d, "pretraining_data.tfrecord"), args.eval_examples)
  print("Pre-training, evaluated on %d instances (step %s):" % (
      args.eval_examples, pretraining["global_step"]))
  print("  masked-LM accuracy      %.3f   (always predicting %r, the commonest "
        "masked token: %.3f)" % (float(pretraining["masked_lm_accuracy"]),
                                 token_of.get(token, token), token_share))
  print("  next-sentence accuracy  %.3f   (always the commoner answer: %.3f)" % (
      float(pretraining["next_sentence_accuracy"]), nsp_share))
  classifier = _results(os.path.join(d, "classifier_output", "eval_results.txt"))
  label, share = majority_share(os.path.join(d, "pairs"))
  print("Fine-tuning on the bundled pair task (is B a shortened copy of A?), dev set:")
  print("  accuracy                %.3f   (always answering %r: %.3f)" % (
      float(classifier["eval_accuracy"]), label, share))
  if check_fine_tuning(d):
    print("  With fewer steps, pairs or epochs than the defaults, train longer; otherwise "
          "try another DEMO_SEED (docs/ablations.md).")
  png = os.path.join(d, "pretraining_loss.png")
  points = loss_curve(os.path.join(d, "pretraining_output", "train"), png)
  if points:
    print("Pre-training loss: %.2f at step %d -> %.2f at step %d; curve: %s" % (
        points[0][1], points[0][0], points[-1][1], points[-1][0], png))


if __name__ == "__main__":
  sys.exit(main())
