"""Pre-training objectives and the original's evaluation metrics (the loss
the training driver minimises is modeling.losses.ModelLoss).

Objectives (`run_pretraining.py --pretraining_objective`, the paper's
section 5.1 ablations):
  mlm_nsp  masked LM + next-sentence prediction, the original;
  mlm      masked LM only: no next-sentence head, variables or loss;
  ltr      a left-to-right language model: a causal attention mask (the
           config's `causal_attention`), the next token predicted at every
           position of the same records with their masking undone, no
           next-sentence prediction.
For `ltr` the masked_lm_* metrics are next-token accuracy and loss.
"""

import numpy as np
import tensorflow as tf

from modeling import bert_model
from plumbing.errors import UserError
from plumbing import progress as progress_lib

OBJECTIVES = ("mlm_nsp", "mlm", "ltr")


def create_pretrainer(config, objective="mlm_nsp"):
  """The pre-training model of `objective`; `ltr` needs a causal config, which
  fine-tuning then reads too (the paper kept the left-only constraint there)."""
  causal = getattr(config, "causal_attention", False)
  if objective == "ltr" and not causal:
    raise UserError('--pretraining_objective=ltr needs "causal_attention": true in '
                    "--bert_config_file (fine-tuning reads the same file).")
  if objective != "ltr" and causal:
    raise UserError('--pretraining_objective=%s needs a bidirectional model: drop '
                    '"causal_attention" from --bert_config_file.' % objective)
  return bert_model.BertPretrainer(config, next_sentence=objective == "mlm_nsp")


class PretrainingMetrics(object):
  """Accumulates the original's eval metrics over batches.

  masked_lm_accuracy / masked_lm_loss: weighted by masked_lm_weights over all
  predictions; next_sentence_accuracy / next_sentence_loss: over examples;
  loss: the mean over batches of the batch loss (what Estimator reported).
  Without a next-sentence head the next_sentence_* metrics are left out.
  """

  def __init__(self):
    self.sums = {k: 0.0 for k in ("mlm_correct", "mlm_loss", "mlm_weight",
                                  "batch_loss", "batches")}

  @staticmethod
  def batch_sums(outputs, features):
    """Per-batch sums (tensors), suitable for a cross-replica SUM."""
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    labels = tf.reshape(tf.cast(features["masked_lm_ids"], tf.int64), [-1])
    predicted = tf.argmax(outputs["masked_lm_logits"], axis=-1)
    sums = {
        "mlm_correct": tf.reduce_sum(weights * tf.cast(tf.equal(predicted, labels), tf.float32)),
        "mlm_loss": tf.reduce_sum(weights * outputs["masked_lm_per_example_loss"]),
        "mlm_weight": tf.reduce_sum(weights),
    }
    if "next_sentence_logits" in outputs:
      nsp_labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int64), [-1])
      nsp_predicted = tf.argmax(outputs["next_sentence_logits"], axis=-1)
      sums.update(
          nsp_correct=tf.reduce_sum(tf.cast(tf.equal(nsp_predicted, nsp_labels), tf.float32)),
          nsp_loss=tf.reduce_sum(outputs["next_sentence_per_example_loss"]),
          examples=tf.cast(tf.size(nsp_labels), tf.float32))
    return sums

  def add(self, sums, batch_loss):
    for k, v in sums.items():
      self.sums[k] = self.sums.get(k, 0.0) + float(v)
    self.sums["batch_loss"] += float(batch_loss)
    self.sums["batches"] += 1

  def result(self):
    s = self.sums
    results = {
        "masked_lm_accuracy": np.float32(s["mlm_correct"] / max(s["mlm_weight"], 1e-12)),
        "masked_lm_loss": np.float32(s["mlm_loss"] / max(s["mlm_weight"], 1e-12)),
        "loss": np.float32(s["batch_loss"] / max(s["batches"], 1)),
    }
    if "examples" in s:
      results.update(
          next_sentence_accuracy=np.float32(s["nsp_correct"] / max(s["examples"], 1)),
          next_sentence_loss=np.float32(s["nsp_loss"] / max(s["examples"], 1)))
    return results


def evaluate(strategy, model, dataset, max_steps=None):
  """Runs the eval dataset (per-replica batches) and returns the metrics."""
  metrics = PretrainingMetrics()
  distributed = strategy.experimental_distribute_dataset(dataset) \
      if not isinstance(dataset, tf.distribute.DistributedDataset) else dataset

  @tf.function(input_signature=[distributed.element_spec])  # Any batch length.
  def eval_step(features):
    def replica(features):
      outputs = model(features, training=False)
      sums = PretrainingMetrics.batch_sums(outputs, features)
      return sums, outputs["loss"]
    sums, loss = strategy.run(replica, args=(features,))
    reduce = lambda v: strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
    # The batch loss is the mean of the replicas' batch losses.
    return ({k: reduce(v) for k, v in sums.items()},
            reduce(loss) / strategy.num_replicas_in_sync)

  progress = progress_lib.Progress("batches", max_steps, verb="Evaluated")
  for step, features in enumerate(distributed):
    if max_steps is not None and step >= max_steps:
      break
    sums, loss = eval_step(features)
    metrics.add(sums, loss)
    progress.advance(1)
  progress.finish()
  return metrics.result()
