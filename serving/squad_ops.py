"""SQuAD prediction in TensorFlow ops, for exported models.

`windows` cuts (question, context) pairs into the features that
`convert_examples_to_features` (tasks/squad/features.py) makes, and
`best_answers` turns the model's logits into what `write_predictions`
(tasks/squad/predictions.py) predicts: the same windows and max-context
choice (serving/window_ops.py), span filters and tie order, and the same
`get_final_text` projection onto the context. Everything stays in the graph,
so a SavedModel answers raw text under TF Serving.

One known difference: TensorFlow's CPU kernels flush subnormal floats
(magnitude below 1.2e-38) to zero, so such logits rank as 0 here, where
Python ranks them by their tiny value. Trained models do not output them.
"""

import tensorflow as tf

from serving import window_ops

# The characters the original splits a context on (tasks.squad.examples._DOC_WORD).
_DOC_SPACE = "[\t\r\n\\x{202f}]"


def _python_whitespace():
  """An RE2 class of the characters str.split() splits on."""
  chars = [c for c in range(0x110000) if chr(c).isspace()]
  return "[%s]+" % "".join("\\x{%x}" % c for c in chars)


_PY_SPACE = _python_whitespace()
_SPACE = ord(" ")


def _lengths(ragged):
  return tf.cast(ragged.row_lengths(), tf.int32)


def windows(tokenizer, questions, contexts, max_seq_length, doc_stride, max_query_length):
  """The features of every window of every (question, context), in order.

  Returns a dict: `input_ids`, `input_mask`, `segment_ids` [windows,
  max_seq_length] int32 (the model's inputs); `example` (which input each
  window belongs to), `doc_offset` (position of its first document token)
  [windows]; `word_index` and `is_max_context` [windows, max_seq_length]
  (per position after doc_offset: the context word of the token, and whether
  this window gives the token its most context); `words` [batch, (words)]
  the context split as the original splits it.
  """
  words = tf.strings.split(tf.strings.regex_replace(contexts, _DOC_SPACE, " "), sep=" ")
  words = tf.ragged.boolean_mask(words, tf.not_equal(words, ""))
  pieces = tokenizer.tokenize_to_ids(words.flat_values)  # [all words, (pieces)]
  doc = words.with_flat_values(pieces).merge_dims(1, 2)  # [batch, (pieces)]
  word_of_piece = tf.repeat(tf.ragged.range(_lengths(words)).flat_values,
                            _lengths(pieces))
  query = tokenizer.tokenize_to_ids(questions)[:, :max_query_length]

  # Each window holds up to max_doc pieces of the context, after the question.
  max_doc = max_seq_length - _lengths(query) - 3
  spans = window_ops.spans(doc, max_doc, doc_stride)
  example = spans.sequence
  window_ids = window_ops.gather_ranges(doc, *spans)
  window_words = window_ops.gather_ranges(doc.with_flat_values(word_of_piece), *spans)
  is_max = window_ops.max_context(doc, spans)

  rows = tf.shape(example)[0]
  column = lambda value: window_ops.column(value, rows)
  query_rows = tf.gather(query, example)
  tokens = tf.concat([column(tokenizer.cls_id), query_rows, column(tokenizer.sep_id),
                      window_ids, column(tokenizer.sep_id)], axis=1)
  segments = tf.concat([column(0), tf.zeros_like(query_rows), column(0),
                        tf.ones_like(window_ids), column(1)], axis=1)
  shape = [rows, max_seq_length]
  return {
      "input_ids": tokens.to_tensor(0, shape=shape),
      "input_mask": tf.ones_like(tokens).to_tensor(0, shape=shape),
      "segment_ids": segments.to_tensor(0, shape=shape),
      "example": example,
      "doc_offset": _lengths(query_rows) + 2,
      "doc_length": spans.end - spans.start,
      "word_index": window_words.to_tensor(0, shape=shape),
      "is_max_context": is_max.to_tensor(False, shape=shape),
      "words": words,
  }


def _best_spans(start_logits, end_logits, features, batch, n_best_size,
                max_answer_length):
  """Per input, the first-ranked valid span over its windows, ranked as the
  original ranks its candidates (score, then window, start rank, end rank).

  Returns (has_span, window, start, end, start_logit, end_logit, score).
  """
  n = min(n_best_size, start_logits.shape[1])
  start_value, start_index = tf.math.top_k(start_logits, n)  # Ties: lower index first.
  end_value, end_index = tf.math.top_k(end_logits, n)
  offset = features["doc_offset"][:, None]
  length = features["doc_length"][:, None]

  def in_document(index):
    return (index >= offset) & (index < offset + length)

  seq_length = tf.shape(start_logits)[1]
  relative = tf.clip_by_value(start_index - offset, 0, seq_length - 1)
  start_ok = in_document(start_index) & tf.gather(
      features["is_max_context"], relative, batch_dims=1)
  span = end_index[:, None, :] - start_index[:, :, None] + 1
  valid = (start_ok[:, :, None] & in_document(end_index)[:, None, :] &
           (span >= 1) & (span <= max_answer_length))
  score = (tf.cast(start_value, tf.float64)[:, :, None] +
           tf.cast(end_value, tf.float64)[:, None, :])

  valid = tf.reshape(valid, [-1])
  score = tf.reshape(score, [-1])
  pair_example = tf.repeat(features["example"], n * n)
  minus_inf = tf.constant(-float("inf"), tf.float64)
  best = tf.math.unsorted_segment_max(tf.where(valid, score, minus_inf), pair_example, batch)
  # An input whose valid spans all score -inf gets the lowest double, not
  # -inf, from the segment max: those spans still rank, as in Python.
  best = tf.where(tf.equal(best, tf.float64.min), minus_inf, best)
  order = tf.range(tf.size(valid))
  none = tf.size(valid)  # Also the index of the dummy pair appended below.
  first = tf.math.unsorted_segment_min(
      tf.where(valid & tf.equal(score, tf.gather(best, pair_example)), order, none),
      pair_example, batch)
  has_span = first < none
  first = tf.minimum(first, none)

  def pick(values):
    flat = tf.reshape(values, [-1])
    return tf.gather(tf.concat([flat, tf.zeros([1], flat.dtype)], 0), first)

  window = pick(tf.repeat(tf.range(tf.shape(start_logits)[0]), n * n))
  start = pick(tf.repeat(start_index, n, axis=1))
  end = pick(tf.tile(end_index, [1, n]))
  start_logit = pick(tf.repeat(start_value, n, axis=1))
  end_logit = pick(tf.tile(end_value, [1, n]))
  return has_span, window, start, end, start_logit, end_logit, pick(score)


def _project(texts):
  """`get_final_text` (tasks/squad/predictions.py) on code points, for one example: the part of
  orig_text under pred_text's place in the basic-tokenized text, or all of
  orig_text when the two cannot be aligned."""
  pred_text, tok_text, orig_text = texts[0], texts[1], texts[2]
  pred = tf.strings.unicode_decode(pred_text, "UTF-8")
  tok = tf.strings.unicode_decode(tok_text, "UTF-8")
  orig = tf.strings.unicode_decode(orig_text, "UTF-8")
  p, n = tf.size(pred), tf.size(tok)
  # str.find: the first place where every character matches.
  at = tf.range(tf.maximum(n - p + 1, 0))
  matches = tf.reduce_all(
      tf.equal(tf.gather(tok, at[:, None] + tf.range(p)[None, :]), pred[None, :]), axis=1)
  found = tf.reduce_any(matches)
  first_match = tf.argmax(tf.cast(tf.concat([matches, [True]], 0), tf.int32))
  start = tf.where(found, tf.cast(first_match, tf.int32), n)
  end = tf.where(found & (p > 0), start + p - 1, n)
  # Space-free alignment; index n is a space sentinel, so misses fail.
  tok_space = tf.concat([tf.equal(tok, _SPACE), [True]], 0)
  orig_kept = tf.cast(tf.where(tf.not_equal(orig, _SPACE))[:, 0], tf.int32)
  tok_kept_before = tf.concat(
      [tf.cumsum(tf.cast(tf.logical_not(tok_space[:-1]), tf.int32), exclusive=True), [0]], 0)
  same_length = tf.equal(tf.size(orig_kept), n - tf.reduce_sum(tf.cast(tok_space[:-1], tf.int32)))
  ok = same_length & tf.logical_not(tok_space[start]) & tf.logical_not(tok_space[end])
  orig_kept = tf.concat([orig_kept, [0]], 0)
  last = tf.size(orig_kept) - 1
  orig_start = orig_kept[tf.minimum(tok_kept_before[start], last)]
  orig_end = orig_kept[tf.minimum(tok_kept_before[end], last)]
  return tf.where(ok, tf.strings.unicode_encode(orig[orig_start:orig_end + 1], "UTF-8"),
                  orig_text)


def _gather_or_zero(params, index, ok):
  """params[index] where ok, else 0 (params may be empty)."""
  params = tf.reshape(params, [-1])
  padded = tf.concat([params, tf.zeros([1], params.dtype)], 0)
  return tf.gather(padded, tf.where(ok, index, tf.size(params)))


def _span_texts(tokenizer, features, window, start, end, has_span):
  """The original-text answer of each (window, start, end) span."""
  seq_length = tf.shape(features["input_ids"])[1]
  start = tf.where(has_span, start, 0)
  end = tf.where(has_span, end, -1)
  base = window * seq_length
  pieces = tf.gather(tokenizer.id_to_token, tf.gather(
      tf.reshape(features["input_ids"], [-1]), tf.ragged.range(start, end + 1) + base[:, None]))
  pred_text = tf.strings.reduce_join(pieces, axis=1, separator=" ")
  pred_text = tf.strings.regex_replace(pred_text, " ##", "")
  pred_text = tf.strings.regex_replace(pred_text, "##", "")
  pred_text = tf.strings.regex_replace(pred_text, _PY_SPACE, " ")
  pred_text = tf.strings.regex_replace(pred_text, "^ | $", "")

  # word_index is stored from each window's first document token on.
  offset = _gather_or_zero(features["doc_offset"], window, has_span)
  word_index = features["word_index"]
  first_word = _gather_or_zero(word_index, base + start - offset, has_span)
  last_word = _gather_or_zero(word_index, base + end - offset, has_span)
  example = _gather_or_zero(features["example"], window, has_span)
  words = features["words"]
  orig = window_ops.gather_ranges(words, example, first_word,
                                 tf.where(has_span, last_word + 1, first_word))
  return final_text(tokenizer, pred_text, tf.strings.reduce_join(orig, axis=1, separator=" "))


def final_text(tokenizer, pred_text, orig_text):
  """`get_final_text` (tasks/squad/predictions.py) of each pair of [batch] strings."""
  tok_text = tf.strings.reduce_join(tokenizer.basic_tokenize(orig_text), axis=1,
                                    separator=" ")
  return tf.map_fn(_project, tf.stack([pred_text, tok_text, orig_text], axis=1),
                   fn_output_signature=tf.TensorSpec([], tf.string))


def best_answers(tokenizer, features, start_logits, end_logits, batch, n_best_size,
                 max_answer_length, version_2_with_negative=False,
                 null_score_diff_threshold=0.0):
  """What predictions.json says for each input, and the scores behind it.

  Returns a dict: `answer` [batch] string; `start_logit`, `end_logit`
  float32 and `score` (their sum, float64) of the best span, as in
  nbest_predictions.json (0 when there is none); for version 2 also
  `null_odds` (float64, as null_odds.json), the answer being "" when it
  exceeds the threshold.
  """
  start_logits = tf.cast(start_logits, tf.float32)
  end_logits = tf.cast(end_logits, tf.float32)
  has_span, window, start, end, start_logit, end_logit, score = _best_spans(
      start_logits, end_logits, features, batch, n_best_size, max_answer_length)
  text = _span_texts(tokenizer, features, window, start, end, has_span)
  if not version_2_with_negative:
    return {"answer": tf.where(has_span, text, "empty"), "start_logit": start_logit,
            "end_logit": end_logit, "score": score}
  null = (tf.cast(start_logits[:, 0], tf.float64) + tf.cast(end_logits[:, 0], tf.float64))
  # The original starts its minimum at 1e6 (kept when no window scores less).
  score_null = tf.minimum(tf.math.unsorted_segment_min(null, features["example"], batch),
                          1000000.0)
  if n_best_size == 1:
    # The n-best then holds only the null answer when it ranks first.
    has_span &= tf.math.is_nan(score_null) | tf.math.is_nan(score) | (score_null <= score)
  null_odds = tf.where(has_span, score_null - tf.cast(start_logit, tf.float64)
                       - tf.cast(end_logit, tf.float64), score_null)
  # Python's `not diff > threshold`, NaN included (grappler would rewrite a
  # logical_not of `>` into `<=`, which is false for NaN).
  keep = tf.math.is_nan(null_odds) | (null_odds <= null_score_diff_threshold)
  answer = tf.where(has_span & keep, text, "")
  return {"answer": answer, "start_logit": start_logit, "end_logit": end_logit,
          "score": tf.where(has_span, score, 0.0), "null_odds": null_odds}
