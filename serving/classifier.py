"""A fine-tuned classifier as a SavedModel for TF Serving.

    export_classifier(model, "export/1", vocab_file, do_lower_case=True,
                      max_seq_length=128, label_list=["0", "1"])

Signatures:
  * `serving_default`: raw text in (`text_a`, and `text_b` for sentence-pair
    tasks; an empty `text_b` means a single sentence), `probabilities` and
    `label` out (`score` for regression). Tokenization, truncation and
    packing run inside the graph and give exactly the original's features.
    What the logits mean is the classifier head's `problem`
    (modeling/heads.py), and its probabilities() what is returned.
  * `serve_features`: `input_ids`, `input_mask`, `segment_ids` in, the same
    outputs.
  * `tokenize`: the text inputs in, the three feature tensors
    [batch, max_seq_length] int32 out.
A multi-label classifier (tasks/multi_label.py) returns `probabilities` (a
sigmoid per label) and `labels`: the labels whose probability reaches the
run's threshold, joined by its separator ("" for none).
A model trained on windows of long texts (run_classifier.py --window_stride)
is exported with its windows: the graph cuts each text as training did
(serving/packing.pack_windows), the features are [batch, windows,
max_seq_length] and the outputs combine the windows' logits.
"""

import dataclasses

import tensorflow as tf

from modeling import heads
from plumbing import tf_example
from serving import export
from serving import packing


@dataclasses.dataclass(frozen=True)
class MultiLabel(object):
  """How a multi-label classifier's export chooses and joins labels."""
  threshold: float = 0.5
  separator: str = ";"


class ClassifierServer(export.Server):
  """What the SavedModel holds: the model, the tokenizer and the labels;
  `multi_label` (a MultiLabel) says how a multi-label head's labels are
  chosen and joined."""

  def __init__(self, model, tokenizer, max_seq_length, label_list, limits=None, windows=None,
               multi_label=None):
    super().__init__(model, tokenizer, name="classifier_server", limits=limits)
    self.max_seq_length = max_seq_length
    # Plain values, not saved state.
    object.__setattr__(self, "windows", windows)
    object.__setattr__(self, "multi_label", multi_label or MultiLabel())
    object.__setattr__(self, "head", model.classifier)
    self.labels = tf.constant([str(l) for l in label_list])

  def features(self, text_a, text_b=None):
    if text_b is None:
      (text_a,) = self.within_limits(text_a=text_a)
    else:
      text_a, text_b = self.within_limits(text_a=text_a, text_b=text_b)
    if self.windows:
      ids_a = self.tokenizer.tokenize_to_ids(text_a)
      ids_b = None if text_b is None else self.tokenizer.tokenize_to_ids(text_b)
      return packing.pack_windows(ids_a, ids_b, self.max_seq_length, self.tokenizer.cls_id,
                                  self.tokenizer.sep_id, self.windows.stride,
                                  self.windows.max_windows)
    texts = text_a if text_b is None else tf.concat([text_a, text_b], axis=0)
    return packing.pack_pair(self.tokenizer.tokenize_to_ids(texts), self.max_seq_length,
                             self.tokenizer.cls_id, self.tokenizer.sep_id,
                             sentence_pair=text_b is not None)

  def outputs(self, features):
    """The model run at the longest row's length, not max_seq_length."""
    features = tf_example.trim_padding(features, 1)
    logits = tf.cast(export.run_model(self.model, features)["logits"], tf.float32)
    probabilities = self.head.probabilities(logits)
    if probabilities is None:
      return {"score": tf.reshape(logits, [-1])}
    if self.head.problem == heads.MULTI_LABEL:
      chosen = tf.ragged.boolean_mask(tf.broadcast_to(self.labels, tf.shape(probabilities)),
                                      probabilities >= self.multi_label.threshold)
      return {"probabilities": probabilities,
              "labels": tf.strings.reduce_join(chosen, axis=-1,
                                               separator=self.multi_label.separator)}
    return {"probabilities": probabilities,
            "label": tf.gather(self.labels, tf.argmax(probabilities, axis=-1))}


def classifier_signatures(server, sentence_pair=True):
  """The three concrete functions, traced with plain (non-XLA) ops."""
  if sentence_pair:
    @tf.function(input_signature=[export.text_spec("text_a"), export.text_spec("text_b")])
    def tokenize(text_a, text_b):
      return server.features(text_a, text_b)

    @tf.function(input_signature=[export.text_spec("text_a"), export.text_spec("text_b")])
    def serve_text(text_a, text_b):
      return server.outputs(server.features(text_a, text_b))
  else:
    @tf.function(input_signature=[export.text_spec("text_a")])
    def tokenize(text_a):
      return server.features(text_a)

    @tf.function(input_signature=[export.text_spec("text_a")])
    def serve_text(text_a):
      return server.outputs(server.features(text_a))

  return export.concrete_functions({
      "serving_default": serve_text,
      "serve_features": export.features_function(server.outputs,
                                                 rank=3 if server.windows else 2),
      "tokenize": tokenize,
  })


def export_classifier(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                      label_list, sentence_pair=True, precision="float32", limits=None,
                      windows=None, multi_label=None):
  """Writes the classifier's SavedModel (see the module docstring; `precision`:
  export.in_precision; `limits`: export.RequestLimits; `windows`: the
  WindowSettings a modeling.BertWindowClassifier was trained with); returns
  export_dir."""
  # Served windows are gathered, whatever training on XLA or TPUs chose.
  model = export.in_precision(model, precision, **({"gather_windows": True} if windows else {}))
  server = ClassifierServer(model, export.graph_tokenizer(vocab_file, do_lower_case),
                            max_seq_length, label_list, limits, windows, multi_label)
  return export.save(server, export_dir, classifier_signatures(server, sentence_pair))
