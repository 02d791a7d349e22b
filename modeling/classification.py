"""Fine-tuning loss, evaluation and prediction of the sentence classifier.

Evaluation reproduces what the original's Estimator reported on CPU/GPU:
`eval_accuracy` and `eval_loss` over the real examples, and `loss`, the mean
over batches of each batch's mean loss (the last batch may be partial). We
always feed full batches (padding examples fill the last one, as the
original did on TPUs) and leave the padding out of every number, so the
results are the original's whichever device runs them. GLUE's own metrics
are added: F1 (MRPC, QQP), Matthews correlation (CoLA), Pearson and Spearman
correlation (STS-B).
"""

import numpy as np
import tensorflow as tf

from modeling import heads
from modeling import inference


class ClassifierLoss(object):
  """Mean cross-entropy (or squared error, for regression) of the global
  batch; each replica contributes its examples' sum over the global count."""

  def __init__(self, is_regression=False):
    self.is_regression = is_regression

  def totals(self, features):
    return {"examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32)}

  def __call__(self, model, features, totals):
    logits = model(features, training=True)["logits"]
    if self.is_regression:
      _, per_example = heads.regression_loss(logits, features["label_ids"])
    else:
      _, per_example = heads.classification_loss(logits, features["label_ids"])
    return tf.reduce_sum(per_example) / totals["examples"]


def run_model(strategy, model, dataset, is_regression=False):
  """Runs `model` over batches of `dataset` (global batches); returns numpy
  arrays: logits (or scores), per-example loss (if labels are present) and
  is_real_example, in input order."""
  def replica(features):
    logits = model(features, training=False)["logits"]
    if is_regression:
      _, per_example = heads.regression_loss(logits, features["label_ids"])
      logits = tf.reshape(logits, [-1])
    else:
      _, per_example = heads.classification_loss(logits, features["label_ids"])
    return logits, per_example, features["is_real_example"]
  return inference.run_batches(strategy, replica, dataset)


def softmax(logits):
  """Class probabilities by TensorFlow's float32 softmax, the original's op."""
  return tf.nn.softmax(tf.constant(logits, tf.float32), axis=-1).numpy()


def batch_mean_loss(per_example_loss, is_real, batch_size):
  """The mean over batches of each batch's mean loss over its real examples."""
  means = []
  for start in range(0, len(per_example_loss), batch_size):
    real = is_real[start:start + batch_size] > 0
    if real.any():
      means.append(per_example_loss[start:start + batch_size][real].mean(dtype=np.float64))
  return float(np.mean(means)) if means else 0.0


def f1_score(labels, predictions, positive=1):
  true_positive = np.sum((predictions == positive) & (labels == positive))
  predicted = np.sum(predictions == positive)
  actual = np.sum(labels == positive)
  if true_positive == 0:
    return 0.0
  precision = true_positive / predicted
  recall = true_positive / actual
  return float(2 * precision * recall / (precision + recall))


def matthews_correlation(labels, predictions):
  tp = float(np.sum((predictions == 1) & (labels == 1)))
  tn = float(np.sum((predictions == 0) & (labels == 0)))
  fp = float(np.sum((predictions == 1) & (labels == 0)))
  fn = float(np.sum((predictions == 0) & (labels == 1)))
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y):
  x = np.asarray(x, np.float64) - np.mean(x)
  y = np.asarray(y, np.float64) - np.mean(y)
  denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
  return float(np.sum(x * y) / denominator) if denominator else 0.0


def _ranks(values):
  """Ranks from 1, ties sharing their average rank."""
  values = np.asarray(values)
  order = np.argsort(values, kind="mergesort")
  ranks = np.empty(len(values), np.float64)
  sorted_values = values[order]
  start = 0
  while start < len(values):
    end = start
    while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
      end += 1
    ranks[order[start:end + 1]] = (start + end) / 2.0 + 1
    start = end + 1
  return ranks


def spearman(x, y):
  return pearson(_ranks(x), _ranks(y))


# Which GLUE metrics each task reports besides accuracy and loss.
TASK_METRICS = {
    "mrpc": ("f1",), "qqp": ("f1",), "cola": ("mcc",), "sts-b": ("pearson", "spearman"),
}


def eval_metrics(outputs, labels, batch_size, task_name="", is_regression=False):
  """The original's eval results (plus the task's GLUE metric), as float32.

  outputs: run_model's (logits, per_example_loss, is_real_example);
  labels: the real examples' label ids (or scores).
  """
  logits, per_example_loss, is_real = outputs
  real = is_real > 0
  results = {
      "eval_loss": np.float32(per_example_loss[real].mean(dtype=np.float64)),
      "loss": np.float32(batch_mean_loss(per_example_loss, is_real, batch_size)),
  }
  labels = np.asarray(labels)
  if is_regression:
    scores = logits[real]
    results["eval_pearson"] = np.float32(pearson(scores, labels))
    results["eval_spearman"] = np.float32(spearman(scores, labels))
    return results
  predictions = np.argmax(logits[real], axis=-1)
  results["eval_accuracy"] = np.float32(np.mean(predictions == labels))
  metrics = TASK_METRICS.get(task_name.lower(), ())
  if "f1" in metrics:
    results["eval_f1"] = np.float32(f1_score(labels, predictions))
  if "mcc" in metrics:
    results["eval_mcc"] = np.float32(matthews_correlation(labels, predictions))
  return results


def write_test_results(path, values):
  """One line per example: tab-separated class probabilities (or the score),
  each as str() of a float32, as the original wrote them."""
  tmp = path + ".tmp"
  with tf.io.gfile.GFile(tmp, "w") as writer:
    for row in values:
      row = np.atleast_1d(np.asarray(row, np.float32))
      writer.write("\t".join(str(v) for v in row) + "\n")
  tf.io.gfile.rename(tmp, path, overwrite=True)


def write_glue_submission(path, examples, values, label_list, is_regression=False):
  """GLUE's submission format: a header, then `index<TAB>prediction` with
  the label name (or the score)."""
  tmp = path + ".tmp"
  with tf.io.gfile.GFile(tmp, "w") as writer:
    writer.write("index\tprediction\n")
    for i, (example, value) in enumerate(zip(examples, values)):
      index = example.index if example.index is not None else str(i)
      prediction = ("%.3f" % float(value) if is_regression
                    else label_list[int(np.argmax(value))])
      writer.write("%s\t%s\n" % (index, prediction))
  tf.io.gfile.rename(tmp, path, overwrite=True)
