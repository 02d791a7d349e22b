"""SavedModel export of a fine-tuned classifier, for TF Serving.

    export_classifier(model, "export/1", vocab_file, do_lower_case=True,
                      max_seq_length=128, label_list=["0", "1"])

The SavedModel has three signatures:
  * `serving_default`: raw text in (`text_a`, and `text_b` for sentence-pair
    tasks; an empty `text_b` means a single sentence), `probabilities` and
    `label` out (`score` for regression). Tokenization, truncation and
    packing run inside the graph and give exactly the original's features.
  * `serve_features`: `input_ids`, `input_mask`, `segment_ids` in, the same
    outputs.
  * `tokenize`: the text inputs in, the three feature tensors
    [batch, max_seq_length] int32 out.
The model is traced with plain TensorFlow ops (no XLA kernels), so stock
`tensorflow_model_server` runs it; only tensorflow-text's ops are needed
besides TensorFlow's own.
"""

import tensorflow as tf

from data_prep import graph_features
from data_prep import graph_tokenization
from modeling import fused

_FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


class ClassifierServer(tf.Module):
  """What the SavedModel holds: the model, the tokenizer and the labels."""

  def __init__(self, model, tokenizer, max_seq_length, label_list, is_regression=False):
    super().__init__(name="classifier_server")
    self.model = model
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length
    self.is_regression = is_regression
    self.labels = tf.constant([str(l) for l in label_list])

  def features(self, text_a, text_b=None):
    ids_a = self.tokenizer.tokenize_to_ids(text_a)
    ids_b = None if text_b is None else self.tokenizer.tokenize_to_ids(text_b)
    return graph_features.pack_pair(ids_a, ids_b, self.max_seq_length,
                                    self.tokenizer.cls_id, self.tokenizer.sep_id)

  def outputs(self, features):
    logits = self.model(features, training=False)["logits"]
    logits = tf.cast(logits, tf.float32)
    if self.is_regression:
      return {"score": tf.reshape(logits, [-1])}
    probabilities = tf.nn.softmax(logits, axis=-1)
    return {"probabilities": probabilities,
            "label": tf.gather(self.labels, tf.argmax(probabilities, axis=-1))}


def _text_spec(name):
  return tf.TensorSpec([None], tf.string, name=name)


def _feature_specs():
  return [tf.TensorSpec([None, None], tf.int32, name=n) for n in _FEATURE_NAMES]


def classifier_signatures(server, sentence_pair=True):
  """The three concrete functions, traced with plain (non-XLA) ops."""
  if sentence_pair:
    @tf.function(input_signature=[_text_spec("text_a"), _text_spec("text_b")])
    def tokenize(text_a, text_b):
      return server.features(text_a, text_b)

    @tf.function(input_signature=[_text_spec("text_a"), _text_spec("text_b")])
    def serve_text(text_a, text_b):
      return server.outputs(server.features(text_a, text_b))
  else:
    @tf.function(input_signature=[_text_spec("text_a")])
    def tokenize(text_a):
      return server.features(text_a)

    @tf.function(input_signature=[_text_spec("text_a")])
    def serve_text(text_a):
      return server.outputs(server.features(text_a))

  @tf.function(input_signature=_feature_specs())
  def serve_features(input_ids, input_mask, segment_ids):
    return server.outputs({"input_ids": input_ids, "input_mask": input_mask,
                           "segment_ids": segment_ids})

  with fused.plain_ops():
    return {
        "serving_default": serve_text.get_concrete_function(),
        "serve_features": serve_features.get_concrete_function(),
        "tokenize": tokenize.get_concrete_function(),
    }


def export_classifier(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                      label_list, is_regression=False, sentence_pair=True):
  """Writes the SavedModel (see the module docstring); returns export_dir.

  Written to a temporary directory and renamed, so an interrupted export
  leaves nothing under `export_dir`.
  """
  tokenizer = graph_tokenization.GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
  server = ClassifierServer(model, tokenizer, max_seq_length, label_list, is_regression)
  signatures = classifier_signatures(server, sentence_pair)
  temporary = export_dir.rstrip("/") + ".tmp-export"
  if tf.io.gfile.exists(temporary):
    tf.io.gfile.rmtree(temporary)
  tf.saved_model.save(server, temporary, signatures=signatures)
  if tf.io.gfile.exists(export_dir):
    tf.io.gfile.rmtree(export_dir)
  tf.io.gfile.rename(temporary, export_dir)
  return export_dir


def xla_functions(export_dir):
  """Names of the functions in a SavedModel that must be XLA-compiled (none
  should be: stock TF Serving would refuse them)."""
  from tensorflow.core.protobuf import saved_model_pb2
  proto = saved_model_pb2.SavedModel()
  with tf.io.gfile.GFile(export_dir.rstrip("/") + "/saved_model.pb", "rb") as f:
    proto.ParseFromString(f.read())
  names = []
  for meta_graph in proto.meta_graphs:
    library = meta_graph.graph_def.library
    for function in library.function:
      attrs = dict(function.attr)
      if attrs.get("_XlaMustCompile") and attrs["_XlaMustCompile"].b:
        names.append(function.signature.name)
      for node in function.node_def:
        if node.attr.get("_XlaMustCompile") and node.attr["_XlaMustCompile"].b:
          names.append("%s/%s" % (function.signature.name, node.name))
  return names
