"""SavedModel exports of fine-tuned models, for TF Serving.

    export_classifier(model, "export/1", vocab_file, do_lower_case=True,
                      max_seq_length=128, label_list=["0", "1"])
    export_span_predictor(model, "export/1", vocab_file, do_lower_case=True,
                          max_seq_length=384, doc_stride=128, ...)

A classifier's SavedModel has three signatures:
  * `serving_default`: raw text in (`text_a`, and `text_b` for sentence-pair
    tasks; an empty `text_b` means a single sentence), `probabilities` and
    `label` out (`score` for regression). Tokenization, truncation and
    packing run inside the graph and give exactly the original's features.
  * `serve_features`: `input_ids`, `input_mask`, `segment_ids` in, the same
    outputs.
  * `tokenize`: the text inputs in, the three feature tensors
    [batch, max_seq_length] int32 out.
A SWAG (multiple-choice) model's SavedModel has three:
  * `serving_default`: `context` (SWAG's sent1), `start` (sent2) [batch] and
    `endings` [batch, num_choices] strings in; `probabilities` [batch,
    num_choices], `prediction` (the ending's index) and `ending` (its text)
    out. Each choice is packed as run_swag.py packs it: context, then start
    + " " + ending.
  * `serve_features`: the three feature tensors [batch, num_choices,
    max_seq_length] in, the same outputs but `ending`.
  * `tokenize`: the text inputs in, the three feature tensors out.
A SQuAD model's SavedModel has two:
  * `serving_default`: `question` and `context` strings in; `answer` (what
    run_squad.py's predictions.json would say) with the `start_logit`,
    `end_logit` and `score` of the best span out (plus `null_odds` for SQuAD
    2.0). Windows, n-best ranking and the projection of the answer onto the
    context run inside the graph (data_prep/graph_squad.py).
  * `serve_features`: `input_ids`, `input_mask`, `segment_ids` of windows in,
    `start_logits` and `end_logits` out.
Models are traced with plain TensorFlow ops (no XLA kernels), so stock
`tensorflow_model_server` runs it; only tensorflow-text's ops are needed
besides TensorFlow's own.
"""

import tensorflow as tf

from data_prep import graph_features
from data_prep import graph_squad
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


def _save(server, export_dir, signatures):
  """Writes to a temporary directory and renames it, so an interrupted
  export leaves nothing under `export_dir`."""
  temporary = export_dir.rstrip("/") + ".tmp-export"
  if tf.io.gfile.exists(temporary):
    tf.io.gfile.rmtree(temporary)
  tf.saved_model.save(server, temporary, signatures=signatures)
  if tf.io.gfile.exists(export_dir):
    tf.io.gfile.rmtree(export_dir)
  tf.io.gfile.rename(temporary, export_dir)
  return export_dir


def export_classifier(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                      label_list, is_regression=False, sentence_pair=True):
  """Writes the classifier's SavedModel (see the module docstring); returns
  export_dir."""
  tokenizer = graph_tokenization.GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
  server = ClassifierServer(model, tokenizer, max_seq_length, label_list, is_regression)
  return _save(server, export_dir, classifier_signatures(server, sentence_pair))


class MultipleChoiceServer(tf.Module):
  """What a SWAG SavedModel holds: the model, the tokenizer, the sequence length."""

  def __init__(self, model, tokenizer, max_seq_length):
    super().__init__(name="multiple_choice_server")
    self.model = model
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length

  def features(self, context, start, endings):
    num_choices = tf.shape(endings)[1]
    contexts = tf.reshape(tf.repeat(context[:, tf.newaxis], num_choices, axis=1), [-1])
    continuations = tf.strings.join(
        [tf.reshape(tf.repeat(start[:, tf.newaxis], num_choices, axis=1), [-1]),
         tf.reshape(endings, [-1])], separator=" ")
    flat = graph_features.pack_pair(
        self.tokenizer.tokenize_to_ids(contexts), self.tokenizer.tokenize_to_ids(continuations),
        self.max_seq_length, self.tokenizer.cls_id, self.tokenizer.sep_id)
    return {name: tf.reshape(flat[name], [-1, num_choices, self.max_seq_length])
            for name in _FEATURE_NAMES}

  def outputs(self, features):
    probabilities = tf.cast(self.model(features, training=False)["probabilities"], tf.float32)
    return {"probabilities": probabilities,
            "prediction": tf.argmax(probabilities, axis=-1, output_type=tf.int32)}

  def answers(self, context, start, endings):
    outputs = self.outputs(self.features(context, start, endings))
    outputs["ending"] = tf.gather(endings, outputs["prediction"], batch_dims=1)
    return outputs


def multiple_choice_signatures(server):
  """serving_default, serve_features and tokenize, traced with plain ops."""
  texts = [_text_spec("context"), _text_spec("start"),
           tf.TensorSpec([None, None], tf.string, name="endings")]

  @tf.function(input_signature=texts)
  def serve_text(context, start, endings):
    return server.answers(context, start, endings)

  @tf.function(input_signature=texts)
  def tokenize(context, start, endings):
    return server.features(context, start, endings)

  @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.int32, name=n)
                                for n in _FEATURE_NAMES])
  def serve_features(input_ids, input_mask, segment_ids):
    return server.outputs({"input_ids": input_ids, "input_mask": input_mask,
                           "segment_ids": segment_ids})

  with fused.plain_ops():
    return {"serving_default": serve_text.get_concrete_function(),
            "serve_features": serve_features.get_concrete_function(),
            "tokenize": tokenize.get_concrete_function()}


def export_multiple_choice(model, export_dir, vocab_file, do_lower_case, max_seq_length):
  """Writes a SWAG model's SavedModel (see the module docstring); returns export_dir."""
  tokenizer = graph_tokenization.GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
  server = MultipleChoiceServer(model, tokenizer, max_seq_length)
  return _save(server, export_dir, multiple_choice_signatures(server))


class SpanServer(tf.Module):
  """What a SQuAD SavedModel holds: the span model, the tokenizer and the
  run_squad.py settings its answers depend on."""

  def __init__(self, model, tokenizer, max_seq_length=384, doc_stride=128,
               max_query_length=64, n_best_size=20, max_answer_length=30,
               version_2_with_negative=False, null_score_diff_threshold=0.0):
    super().__init__(name="span_server")
    self.model = model
    self.tokenizer = tokenizer
    self.settings = dict(
        max_seq_length=max_seq_length, doc_stride=doc_stride,
        max_query_length=max_query_length, n_best_size=n_best_size,
        max_answer_length=max_answer_length,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold)

  def logits(self, features):
    outputs = self.model({n: features[n] for n in _FEATURE_NAMES}, training=False)
    return {"start_logits": tf.cast(outputs["start_logits"], tf.float32),
            "end_logits": tf.cast(outputs["end_logits"], tf.float32)}

  def answers(self, question, context):
    s = self.settings
    features = graph_squad.windows(self.tokenizer, question, context, s["max_seq_length"],
                                   s["doc_stride"], s["max_query_length"])
    logits = self.logits(features)
    return graph_squad.best_answers(
        self.tokenizer, features, logits["start_logits"], logits["end_logits"],
        tf.shape(question)[0], s["n_best_size"], s["max_answer_length"],
        s["version_2_with_negative"], s["null_score_diff_threshold"])


def span_signatures(server):
  """serving_default (question, context -> answer) and serve_features."""
  @tf.function(input_signature=[_text_spec("question"), _text_spec("context")])
  def serve_text(question, context):
    return server.answers(question, context)

  @tf.function(input_signature=_feature_specs())
  def serve_features(input_ids, input_mask, segment_ids):
    return server.logits({"input_ids": input_ids, "input_mask": input_mask,
                          "segment_ids": segment_ids})

  with fused.plain_ops():
    return {"serving_default": serve_text.get_concrete_function(),
            "serve_features": serve_features.get_concrete_function()}


def export_span_predictor(model, export_dir, vocab_file, do_lower_case, **settings):
  """Writes a SQuAD model's SavedModel; `settings` are SpanServer's keyword
  arguments (run_squad.py's flags of the same names). Returns export_dir."""
  tokenizer = graph_tokenization.GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
  server = SpanServer(model, tokenizer, **settings)
  return _save(server, export_dir, span_signatures(server))


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
