"""What the training driver minimises: one loss object per kind of model.

Each is called on one replica's part of a global batch (or one micro-batch
of it) and returns that part's share of the global batch's loss, so that the
shares summed over replicas and micro-batches are exactly the one-device loss
of the whole batch: `totals(features)` gives the batch-wide sums a share is
divided by, which the driver adds up across replicas first.
"""

import tensorflow as tf

from modeling import heads


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


class SpanLoss(object):
  """Mean span loss of the global batch, for the distributed training loop."""

  def totals(self, features):
    return {"examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32)}

  def __call__(self, model, features, totals):
    outputs = model(features, training=True)
    per_example = heads.span_loss_per_example(
        outputs["start_logits"], outputs["end_logits"], features["start_positions"],
        features["end_positions"])
    return tf.reduce_sum(per_example) / totals["examples"]


class TaggingLoss(object):
  """Mean cross-entropy over the labelled tokens of the global batch (a
  word's first WordPiece); each replica contributes its sum over the global
  count."""

  def totals(self, features):
    return {"tags": tf.reduce_sum(tf.cast(features["tag_ids"] >= 0, tf.float32))}

  def __call__(self, model, features, totals):
    logits = model(features, training=True)["token_logits"]
    per_token, _ = heads.tagging_loss(logits, features["tag_ids"])
    return tf.reduce_sum(per_token) / tf.maximum(totals["tags"], 1.0)


class PretrainingLoss(object):
  """Masked-LM + next-sentence loss of the global batch, split by replica.

  The original's masked-LM loss is sum(weight * loss) / (sum(weight) + 1e-5)
  over the batch, so a replica's share divides its own numerator by the
  global weight sum (`totals`); next-sentence loss is a mean over examples.
  Summed over replicas and micro-batches these give exactly the one-device
  loss of the whole batch.
  """

  def totals(self, features):
    return {
        "mask_weight": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
        "examples": tf.cast(tf.shape(features["input_ids"])[0], tf.float32),
    }

  def __call__(self, model, features, totals):
    # The parts of BertPretrainer, called directly: only what the loss needs
    # is computed (no [predictions, vocab] log-probabilities inside the loop).
    out = model.bert(features, training=True,
                     output_positions=features["masked_lm_positions"])
    mlm_logits = model.masked_lm(out["sequence_output"], model.bert.embedding_table)
    _, mlm_per_example = heads.masked_lm_loss(
        mlm_logits, features["masked_lm_ids"], features["masked_lm_weights"])
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    loss = tf.reduce_sum(weights * mlm_per_example) / (totals["mask_weight"] + 1e-5)
    if model.next_sentence is not None:
      nsp_logits = model.next_sentence(out["pooled_output"])
      _, nsp_per_example = heads.classification_loss(
          nsp_logits, features["next_sentence_labels"])
      loss += tf.reduce_sum(nsp_per_example) / totals["examples"]
    return loss
