"""A classification task's outputs: the result a task is scored by,
test_results.tsv and the GLUE submission file (its eval metrics are
tasks/metrics.py's, which every kind of task shares).
"""

import numpy as np

from plumbing import files


# The result GLUE scores each task by, by the keys its eval results have:
# Spearman correlation (STS-B), Matthews correlation (CoLA), F1 (MRPC, QQP),
# else accuracy.
GLUE_METRIC_PRECEDENCE = ("eval_spearman", "eval_mcc", "eval_f1", "eval_accuracy")


def glue_metric(results):
  """The key of `results` (eval_metrics' or eval_results.txt's) that the
  task is scored by."""
  return next(k for k in GLUE_METRIC_PRECEDENCE if k in results)


def write_test_results(path, values):
  """One line per example: tab-separated class probabilities (or the score),
  each as str() of a float32, as the original wrote them."""
  with files.atomic_output(path) as writer:
    for row in values:
      row = np.atleast_1d(np.asarray(row, np.float32))
      writer.write("\t".join(str(v) for v in row) + "\n")


def write_glue_submission(path, examples, values, label_list, is_regression=False):
  """GLUE's submission format: a header, then `index<TAB>prediction` with
  the label name (or the score)."""
  with files.atomic_output(path) as writer:
    writer.write("index\tprediction\n")
    for i, (example, value) in enumerate(zip(examples, values)):
      index = example.index if example.index is not None else str(i)
      prediction = ("%.3f" % float(value) if is_regression
                    else label_list[int(np.argmax(value))])
      writer.write("%s\t%s\n" % (index, prediction))
