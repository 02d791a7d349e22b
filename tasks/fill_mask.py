"""Fill-mask's input and output files: texts holding [MASK], as model
inputs, and each mask's most likely tokens as JSON lines.

A text's [MASK] marks (the literal, upper case) are cut out before
tokenization and each becomes the [MASK] token, so a mask is always one
token, whatever touches it; the pieces between are tokenized as any text.
[CLS] text [SEP] is cut to --max_seq_length, and masks past the cut are
left out (the output says how many).
"""

import collections
import json

from absl import logging
import numpy as np

import tensorflow as tf

from modeling import inference
from plumbing.errors import UserError
from plumbing import files
from plumbing import text_io

MASK = "[MASK]"

Feature = collections.namedtuple("Feature", ["line", "text", "input_ids", "positions",
                                             "dropped"])


def read_texts(input_file):
  """(line number, text) of each line; an error naming the line if not UTF-8."""
  lines = [(number, text.strip()) for number, text in text_io.iter_text_lines(input_file)]
  if not lines:
    raise UserError("%s is empty." % input_file)
  return lines


def feature_of(line, text, tokenizer, max_seq_length):
  """The model's input ids for one text, and its masks' positions."""
  vocab = tokenizer.vocab
  body, positions = [], []
  segments = text.split(MASK)
  for i, segment in enumerate(segments):
    body += tokenizer.tokenize_to_ids(segment)
    if i < len(segments) - 1:
      positions.append(len(body) + 1)  # After [CLS].
      body.append(vocab[MASK])
  body = body[:max_seq_length - 2]
  kept = [p for p in positions if p <= len(body)]
  return Feature(line, text, [vocab["[CLS]"]] + body + [vocab["[SEP]"]], kept,
                 len(positions) - len(kept))


def features_of(lines, tokenizer, max_seq_length, input_file):
  for token in (MASK, "[CLS]", "[SEP]"):
    if token not in tokenizer.vocab:
      raise UserError("The vocabulary has no %s token." % token)
  out = [feature_of(line, text, tokenizer, max_seq_length) for line, text in lines]
  without = [f.line for f in out if not f.positions]
  if without:
    logging.warning("%s: %d lines have no %s within --max_seq_length (the first: line %d); "
                    "their output lists no masks.", input_file, len(without), MASK, without[0])
  return out


def padded(features, max_seq_length):
  """{input_ids, input_mask, segment_ids [n, max_seq_length], masked_lm_positions
  [n, most masks]} as NumPy arrays (position 0, [CLS], fills)."""
  n = len(features)
  width = max([len(f.positions) for f in features] + [1])
  arrays = {"input_ids": np.zeros((n, max_seq_length), np.int32),
            "input_mask": np.zeros((n, max_seq_length), np.int32),
            "segment_ids": np.zeros((n, max_seq_length), np.int32),
            "masked_lm_positions": np.zeros((n, width), np.int32)}
  for i, f in enumerate(features):
    arrays["input_ids"][i, :len(f.input_ids)] = f.input_ids
    arrays["input_mask"][i, :len(f.input_ids)] = 1
    arrays["masked_lm_positions"][i, :len(f.positions)] = f.positions
  return arrays


def write_results(path, features, top_ids, top_probabilities, id_to_token):
  """One JSON line per input line: its text and, per mask, the top tokens
  with their ids and probabilities; written whole or not at all."""
  with files.atomic_output(path) as f:
    for feature, ids, probabilities in zip(features, top_ids, top_probabilities):
      masks = [{"position": int(position),
                "predictions": [{"token": id_to_token[int(t)], "id": int(t),
                                 "probability": float(p)} for t, p in zip(ids[k], probs)]}
               for k, (position, probs) in enumerate(zip(feature.positions, probabilities))]
      record = {"line": feature.line, "text": feature.text, "masks": masks}
      if feature.dropped:
        record["masks_past_max_seq_length"] = feature.dropped
      f.write(json.dumps(record, ensure_ascii=False) + "\n")


def masked_lm_top_k(strategy, model, records, num_records, batch_size, top_k,
                    trim_to_multiple=None):
  """The `top_k` most likely tokens at each of `masked_lm_positions` by a
  model with the masked-LM head (the original's get_masked_lm_output):
  (ids [records, masks, top_k] int32, probabilities float32), input order;
  ties go to the lower id."""
  def replica(features):
    log_probs = model(features, training=False)["masked_lm_log_probs"]
    masks = tf.shape(features["masked_lm_positions"])[1]
    values, ids = tf.math.top_k(tf.reshape(log_probs, [-1, masks, log_probs.shape[-1]]),
                                top_k)
    return ids, tf.exp(values)
  logging.info("  Batch size = %d", batch_size)
  return inference.outputs_in_order(strategy, replica, records, num_records, batch_size,
                                    trim_to_multiple)
