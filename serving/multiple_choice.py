"""A fine-tuned SWAG (multiple-choice) model as a SavedModel for TF Serving.

Signatures:
  * `serving_default`: `context` (SWAG's sent1), `start` (sent2) [batch] and
    `endings` [batch, num_choices] strings in; `probabilities` [batch,
    num_choices], `prediction` (the ending's index) and `ending` (its text)
    out. Each choice is packed as run_swag.py packs it: context, then start
    + " " + ending.
  * `serve_features`: the three feature tensors [batch, num_choices,
    max_seq_length] in, the same outputs but `ending`.
  * `tokenize`: the text inputs in, the three feature tensors out.
"""

import tensorflow as tf

from plumbing import tf_example
from serving import export
from serving import packing


class MultipleChoiceServer(export.Server):
  """What a SWAG SavedModel holds: the model, the tokenizer, the sequence length."""

  def __init__(self, model, tokenizer, max_seq_length, limits=None):
    super().__init__(model, tokenizer, name="multiple_choice_server", limits=limits)
    self.max_seq_length = max_seq_length

  def features(self, context, start, endings):
    context, start, endings = self.within_limits(context=context, start=start, endings=endings)
    num_choices = tf.shape(endings)[1]
    contexts = tf.reshape(tf.repeat(context[:, tf.newaxis], num_choices, axis=1), [-1])
    continuations = tf.strings.join(
        [tf.reshape(tf.repeat(start[:, tf.newaxis], num_choices, axis=1), [-1]),
         tf.reshape(endings, [-1])], separator=" ")
    flat = packing.pack_pair(
        self.tokenizer.tokenize_to_ids(tf.concat([contexts, continuations], axis=0)),
        self.max_seq_length, self.tokenizer.cls_id, self.tokenizer.sep_id)
    return {name: tf.reshape(flat[name], [-1, num_choices, self.max_seq_length])
            for name in export.FEATURE_NAMES}

  def outputs(self, features):
    """The model run at the longest row's length, not max_seq_length."""
    features = tf_example.trim_padding(features, 1)
    probabilities = tf.cast(export.run_model(self.model, features)["probabilities"],
                            tf.float32)
    return {"probabilities": probabilities,
            "prediction": tf.argmax(probabilities, axis=-1, output_type=tf.int32)}

  def answers(self, context, start, endings):
    outputs = self.outputs(self.features(context, start, endings))
    outputs["ending"] = tf.gather(endings, outputs["prediction"], batch_dims=1)
    return outputs


def multiple_choice_signatures(server):
  """serving_default, serve_features and tokenize, traced with plain ops."""
  texts = [export.text_spec("context"), export.text_spec("start"),
           tf.TensorSpec([None, None], tf.string, name="endings")]

  @tf.function(input_signature=texts)
  def serve_text(context, start, endings):
    return server.answers(context, start, endings)

  @tf.function(input_signature=texts)
  def tokenize(context, start, endings):
    return server.features(context, start, endings)

  return export.concrete_functions({
      "serving_default": serve_text,
      "serve_features": export.features_function(server.outputs, rank=3),
      "tokenize": tokenize,
  })


def export_multiple_choice(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                           precision="float32", limits=None):
  """Writes a SWAG model's SavedModel (see the module docstring; `precision`:
  export.in_precision; `limits`: export.RequestLimits); returns export_dir."""
  model = export.in_precision(model, precision)
  server = MultipleChoiceServer(model, export.graph_tokenizer(vocab_file, do_lower_case),
                                max_seq_length, limits)
  return export.save(server, export_dir, multiple_choice_signatures(server))
