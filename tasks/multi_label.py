"""Multi-label text classification as a kind of task for the driver
(tasks/driver.py): a text with any number of labels, from the user's CSV,
TSV or JSON Lines files (a label column such as `sports;politics`).

The classifier head has a sigmoid per label and binary cross-entropy
(heads.MULTI_LABEL, transformers' "multi_label_classification"); a text's
labels are those whose probability reaches `threshold`.
eval_results.txt: micro F1 (every label decision of every text counted
together), macro F1 (the mean of the labels' own F1; 0 for a label neither
present nor predicted, as scikit-learn counts it), exact match (the share
of texts whose labels are all right) and the losses. Predictions:
test_results.tsv (each label's probability) and test_predictions.tsv (each
text's labels). The export takes raw text and returns each label's
probability and the chosen labels.
"""

import os

import numpy as np

from modeling import heads
from plumbing import files
from tasks import metrics
from tasks.classification import features
from tasks.classification import outputs
from tasks.classification.task import ClassificationTask


def f1(true_positives, false_positives, false_negatives):
  """2TP / (2TP + FP + FN), 0 where all three are 0."""
  denominator = 2 * true_positives + false_positives + false_negatives
  return np.divide(2.0 * true_positives, denominator,
                   out=np.zeros(np.shape(denominator)), where=denominator > 0)


def scores(gold, predicted):
  """{micro_f1, macro_f1, exact_match} of 0/1 arrays [texts, labels]."""
  gold, predicted = np.asarray(gold, bool), np.asarray(predicted, bool)
  tp = (gold & predicted).sum(axis=0)
  fp = (~gold & predicted).sum(axis=0)
  fn = (gold & ~predicted).sum(axis=0)
  return {"micro_f1": float(f1(tp.sum(), fp.sum(), fn.sum())),
          "macro_f1": float(f1(tp, fp, fn).mean()),
          "exact_match": float((gold == predicted).all(axis=1).mean())}


class MultiLabelTask(ClassificationTask):
  """`processor`: a user_files.UserFilesProcessor with a label separator;
  `threshold`: the probability from which a label is chosen. Its model,
  records and export are classification's, of the heads.MULTI_LABEL
  problem."""

  best_metric = "eval_micro_f1"

  def __init__(self, processor, tokenizer, max_seq_length, export, threshold=0.5):
    super().__init__(processor, None, tokenizer, max_seq_length, export)
    self.problem = heads.MULTI_LABEL
    self.threshold = threshold

  def _probabilities(self, logits):
    return metrics.probabilities(self.problem, logits, np.float64)

  def _chosen(self, logits):
    return self._probabilities(logits) >= self.threshold

  def results(self, examples, written, model_outputs, batch_size):
    logits, per_example_loss, is_real = model_outputs
    real = is_real > 0
    gold = features.label_ids_of(examples, self.labels, False)
    results = {"eval_" + k: np.float32(v)
               for k, v in scores(gold, self._chosen(logits[real])).items()}
    results.update(
        eval_loss=np.float32(per_example_loss[real].mean(dtype=np.float64)),
        loss=np.float32(metrics.batch_mean_loss(per_example_loss, is_real, batch_size)))
    return results

  def write_predictions(self, examples, written, model_outputs, output_dir):
    logits, _, is_real = model_outputs
    logits = logits[is_real > 0]
    outputs.write_test_results(os.path.join(output_dir, "test_results.tsv"),
                               self._probabilities(logits))
    with files.atomic_output(os.path.join(output_dir, "test_predictions.tsv")) as writer:
      writer.write("index\tlabels\n")
      for i, (example, chosen) in enumerate(zip(examples, self._chosen(logits))):
        labels = self.processor.separator.join(
            label for label, on in zip(self.labels, chosen) if on)
        writer.write("%s\t%s\n" % (example.index or i, labels))

  def export(self, model, export_dir):
    from serving import classifier  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    e = self.export_settings
    classifier.export_classifier(
        model, export_dir, e.vocab_file, e.do_lower_case, self.max_seq_length, self.labels,
        sentence_pair=not self.processor.single_sentence, precision=e.precision,
        limits=e.limits, multi_label=classifier.MultiLabel(self.threshold,
                                                           self.processor.separator))
