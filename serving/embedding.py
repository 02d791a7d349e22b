"""A BERT's sentence vectors as a SavedModel for TF Serving: raw text in,
embed.py's vector out.

    export_embedder(model, "export/1", vocab_file, do_lower_case=True,
                    max_seq_length=256, pooling="mean", normalize=True)

Signatures:
  * `serving_default`: `text` [batch] in; `embedding` [batch, hidden]
    float32 (the pooled last layer, L2-normalised if so exported:
    modeling.pooling.sentence_vectors) and `num_tokens` [batch] (the
    tokens it pooled, [CLS] and [SEP] included) out. The text is tokenized
    in the graph and [CLS] text [SEP] cut to max_seq_length, as
    sentence-transformers cuts it.
  * `serve_features`: `input_ids`, `input_mask`, `segment_ids` in, the same
    outputs.
  * `tokenize`: `text` in, the three feature tensors [batch, max_seq_length] out.
"""

import tensorflow as tf

from modeling import pooling
from plumbing import tf_example
from serving import export
from serving import packing


class EmbeddingServer(export.Server):
  """The encoder, the tokenizer, and how a vector is made of its last layer."""

  def __init__(self, model, tokenizer, max_seq_length, pooling, normalize, limits=None):
    super().__init__(model, tokenizer, name="embedding_server", limits=limits)
    self.max_seq_length = max_seq_length
    object.__setattr__(self, "pooling", pooling)  # Plain values, not saved state.
    object.__setattr__(self, "normalize", normalize)

  def features(self, text):
    (text,) = self.within_limits(text=text)
    return packing.pack_pair(self.tokenizer.tokenize_to_ids(text), self.max_seq_length,
                             self.tokenizer.cls_id, self.tokenizer.sep_id, sentence_pair=False)

  def outputs(self, features):
    """The model run at the longest row's length, not max_seq_length."""
    features = tf_example.trim_padding(features, 1)
    length = tf.shape(features["input_mask"])[1]
    tokens = export.run_model(self.model, features)["sequence_output"][:, :length]
    return {"embedding": pooling.sentence_vectors(tokens, features["input_mask"],
                                                  self.pooling, self.normalize),
            "num_tokens": tf.reduce_sum(tf.cast(features["input_mask"], tf.int32), axis=1)}


def export_embedder(model, export_dir, vocab_file, do_lower_case, max_seq_length, pooling,
                    normalize, precision="float32", limits=None):
  """Writes the SavedModel of a BertModel's sentence vectors (see the module
  docstring; `precision`: export.in_precision; `limits`:
  export.RequestLimits); returns export_dir."""
  model = export.in_precision(model, precision)
  server = EmbeddingServer(model, export.graph_tokenizer(vocab_file, do_lower_case),
                           max_seq_length, pooling, normalize, limits)

  @tf.function(input_signature=[export.text_spec("text")])
  def tokenize(text):
    return server.features(text)

  @tf.function(input_signature=[export.text_spec("text")])
  def serve_text(text):
    return server.outputs(server.features(text))

  return export.save(server, export_dir, export.concrete_functions({
      "serving_default": serve_text,
      "serve_features": export.features_function(server.outputs),
      "tokenize": tokenize}))
