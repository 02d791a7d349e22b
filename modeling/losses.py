"""What the training driver minimises: the sum of the model's heads' losses
(heads.py declares each head's terms), over the global batch.

The loss object is called on one replica's part of a global batch (or one
micro-batch of it) and returns that part's share of the global batch's loss:
each head's numerators summed over the part, over the denominator of the
whole batch's weights, which `totals(features)` gives per replica and the
driver adds up across replicas first. Summed over replicas and
micro-batches the shares are exactly the one-device loss of the whole batch.
"""

import tensorflow as tf


class ModelLoss(object):
  """The loss of `model` (a bert_model.BertWithHeads): every head whose
  labels the features hold."""

  def __init__(self, model):
    self.heads = model.heads

  def totals(self, features):
    """{part: the sum of that head's loss weights} over `features`."""
    return {head.part: tf.reduce_sum(head.loss_weights(features))
            for head in self.heads if head.label in features}

  def __call__(self, model, features, totals):
    outputs = model(features, training=True)
    loss = 0.0
    for head in self.heads:
      if head.label in features:
        weighted = head.loss_weights(features) * head.loss_terms(outputs, features)
        loss += tf.reduce_sum(weighted) / head.loss_denominator(totals[head.part])
    return loss
