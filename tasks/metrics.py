"""The numbers every kind of task reports: class probabilities, losses over
batches of real examples, and the metrics of eval_results.txt.

Evaluation reproduces what the original's Estimator reported on CPU/GPU:
`eval_accuracy` and `eval_loss` over the real examples, and `loss`, the mean
over batches of each batch's mean loss (the last batch may be partial). We
always feed full batches (padding examples fill the last one, as the
original did on TPUs) and leave the padding out of every number, so the
results are the original's whichever device runs them. GLUE's own metrics
are here too: F1 (MRPC, QQP), Matthews correlation (CoLA), Pearson and
Spearman correlation (STS-B, and scored sentence pairs).
"""

import numpy as np

from modeling import heads


def probabilities(problem, logits, dtype=np.float32):
  """The classifier head's probabilities (modeling.heads.probabilities) of
  numpy logits, computed in `dtype` (float32: TensorFlow's softmax, the
  original's op), as numpy; None for a score."""
  values = heads.probabilities(problem, np.asarray(logits, dtype))
  return None if values is None else values.numpy()


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
  """Of two equally long score lists; a [n, 1] column counts as n scores."""
  x, y = (np.ravel(np.asarray(v, np.float64)) for v in (x, y))
  if x.shape != y.shape:
    raise ValueError("Correlating %d scores with %d." % (x.size, y.size))
  x, y = x - x.mean(), y - y.mean()
  denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
  return float(np.sum(x * y) / denominator) if denominator else 0.0


def _ranks(values):
  """Ranks from 1, ties sharing their average rank."""
  values = np.ravel(values)
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


def eval_metrics(outputs, labels, batch_size, metrics=(), is_regression=False):
  """The original's eval results, plus the task's GLUE `metrics` ("f1",
  "mcc"; Pearson and Spearman for regression), as float32.

  outputs: (logits, per_example_loss, is_real_example) of the model over the
  batches (modeling.inference.classifier_outputs); labels: the real
  examples' label ids (or scores).
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
  if "f1" in metrics:
    results["eval_f1"] = np.float32(f1_score(labels, predictions))
  if "mcc" in metrics:
    results["eval_mcc"] = np.float32(matthews_correlation(labels, predictions))
  return results
