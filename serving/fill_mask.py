"""A checkpoint's masked-LM head as a SavedModel: raw text with [MASK]s in,
each mask's most likely tokens out, as fill_mask.py writes them.

Signatures:
  * `serving_default`: `text` [batch] in; out, per text, for up to the
    request's most masks (padded): `tokens` [batch, masks, top_k] (""
    for padding), `token_ids` (-1), `probabilities` (0), and `num_masks`.
    Each [MASK] literal becomes the [MASK] token, the pieces between are
    tokenized in the graph (serving/tokenizer.py); [CLS] text [SEP] is cut
    to max_seq_length, dropping the masks past it.
  * `tokenize`: `text` in, `input_ids`, `input_mask`, `segment_ids` and
    `masked_lm_positions` out.
"""

import tensorflow as tf

from serving import export

_MASK = "[MASK]"


class FillMaskServer(export.Server):
  """The model (BertWithHeads with the masked-LM head), the tokenizer, and k."""

  def __init__(self, model, tokenizer, max_seq_length, top_k, mask_id, limits=None):
    super().__init__(model, tokenizer, name="fill_mask_server", limits=limits)
    self.max_seq_length, self.top_k, self.mask_id = max_seq_length, top_k, mask_id

  def features(self, text):
    (text,) = self.within_limits(text=text)
    segments = tf.strings.split(text, sep=_MASK)  # [batch, (segments)]
    ids = self.tokenizer.tokenize_to_ids(segments.flat_values)  # [segments, (ids)]
    position = tf.ragged.range(segments.row_lengths()).flat_values
    last = tf.equal(position, tf.gather(segments.row_lengths(), segments.value_rowids()) - 1)
    masks = tf.ragged.boolean_mask(tf.fill([tf.shape(position)[0], 1], self.mask_id),
                                   ~last[:, None])
    body = segments.with_flat_values(tf.concat([ids, masks], axis=1)).merge_dims(1, 2)
    body = body[:, :self.max_seq_length - 2]
    rows = body.nrows()
    cls = tf.fill([rows, 1], self.tokenizer.cls_id)
    sep = tf.fill([rows, 1], self.tokenizer.sep_id)
    tokens = tf.concat([cls, body, sep], axis=1)
    where = tf.ragged.boolean_mask(tf.ragged.range(tokens.row_lengths()),
                                   tf.equal(tokens, self.mask_id))
    shape = [rows, self.max_seq_length]
    return {"input_ids": tokens.to_tensor(0, shape=shape),
            "input_mask": tf.ones_like(tokens).to_tensor(0, shape=shape),
            "segment_ids": tf.zeros_like(tokens).to_tensor(0, shape=shape),
            "masked_lm_positions": tf.cast(where.to_tensor(0), tf.int32),
            "num_masks": tf.cast(where.row_lengths(), tf.int32)}

  def serve_text(self, text):
    features = self.features(text)
    width = tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=1))
    inputs = {name: features[name][:, :width] for name in export.FEATURE_NAMES}
    inputs["masked_lm_positions"] = features["masked_lm_positions"]
    log_probs = self.model(inputs, training=False)["masked_lm_log_probs"]
    masks = tf.shape(features["masked_lm_positions"])[1]
    values, ids = tf.math.top_k(tf.reshape(log_probs, [-1, masks, log_probs.shape[-1]]),
                                self.top_k)
    real = tf.sequence_mask(features["num_masks"], masks)[:, :, None]
    return {"tokens": tf.where(real, tf.gather(self.tokenizer.id_to_token, ids), ""),
            "token_ids": tf.where(real, ids, -1),
            "probabilities": tf.where(real, tf.exp(values), 0.0),
            "num_masks": features["num_masks"]}


def export_fill_mask(model, export_dir, vocab_file, do_lower_case, max_seq_length, top_k,
                     precision="float32", limits=None):
  """Writes the SavedModel (see the module docstring); returns export_dir."""
  model = export.in_precision(model, precision)
  tokenizer = export.graph_tokenizer(vocab_file, do_lower_case)
  from data_prep import tokenization  # pylint: disable=g-import-not-at-top
  mask_id = tokenization.load_vocab(vocab_file)[_MASK]
  server = FillMaskServer(model, tokenizer, max_seq_length, top_k, mask_id, limits)

  @tf.function(input_signature=[export.text_spec("text")])
  def tokenize(text):
    return server.features(text)

  @tf.function(input_signature=[export.text_spec("text")])
  def serve_text(text):
    return server.serve_text(text)

  return export.save(server, export_dir, export.concrete_functions(
      {"serving_default": serve_text, "tokenize": tokenize}))
