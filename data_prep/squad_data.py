"""SQuAD 1.1 / 2.0 question answering: reading, windowed features, predictions.

Keeps the public names and the exact behaviour of the original
`run_squad.py`: `SquadExample`, `InputFeatures`, `read_squad_examples`,
`convert_examples_to_features` (same windows, maps, positions and unique ids),
`FeatureWriter` (same records, in the canonical sorted-map serialisation),
`RawResult`, `write_predictions` (same three JSON files, byte for byte) and
`get_final_text`. See
tests/data/squad_reference/README.md for the list of quirks that are copied
on purpose.

Differences that do not change any output:
  * bad input raises `UserError` naming the file and the question id, not a
    KeyError/IndexError from deep inside;
  * the version-2 switches are arguments, not flags;
  * feature creation tokenizes each document once (not once per question) and
    each distinct word once, finds each token's "max context" window in one
    pass, and streams features to `output_fn`; files are written atomically.
"""

import bisect
import collections
import heapq
import json
import math
import os
import re

from absl import logging
import numpy as np

from data_prep import tfrecord_io
from data_prep import tokenization
from data_prep.errors import UserError

FIRST_UNIQUE_ID = 1000000000

# The original splits document text on these characters only; other Unicode
# spaces stay inside a word (the WordPiece tokenizer splits there later).
_DOC_WORD = re.compile("[^ \t\r\n\u202f]+")


class SquadExample(object):
  """One question about one paragraph; answer fields only set for training."""

  def __init__(self, qas_id, question_text, doc_tokens, orig_answer_text=None,
               start_position=None, end_position=None, is_impossible=False):
    self.qas_id = qas_id
    self.question_text = question_text
    self.doc_tokens = doc_tokens
    self.orig_answer_text = orig_answer_text
    self.start_position = start_position
    self.end_position = end_position
    self.is_impossible = is_impossible

  def __str__(self):
    return self.__repr__()

  def __repr__(self):
    parts = ["qas_id: %s" % self.qas_id,
             "question_text: %s" % self.question_text,
             "doc_tokens: [%s]" % " ".join(self.doc_tokens)]
    if self.start_position:
      parts.append("start_position: %d" % self.start_position)
    if self.end_position:
      parts.append("end_position: %d" % self.end_position)
    if self.is_impossible:
      parts.append("is_impossible: %r" % self.is_impossible)
    return ", ".join(parts)


class InputFeatures(object):
  """The model inputs of one window of one example, plus what maps it back."""

  def __init__(self, unique_id, example_index, doc_span_index, tokens,
               token_to_orig_map, token_is_max_context, input_ids, input_mask,
               segment_ids, start_position=None, end_position=None,
               is_impossible=None):
    self.unique_id = unique_id
    self.example_index = example_index
    self.doc_span_index = doc_span_index
    self.tokens = tokens
    self.token_to_orig_map = token_to_orig_map
    self.token_is_max_context = token_is_max_context
    self.input_ids = input_ids
    self.input_mask = input_mask
    self.segment_ids = segment_ids
    self.start_position = start_position
    self.end_position = end_position
    self.is_impossible = is_impossible


class SquadExamples(list):
  """The examples read from a file (a plain list to callers), remembering which
  training questions were dropped because their answer is not in the text."""

  def __init__(self, examples=(), skipped_qas_ids=(), skip_warnings=()):
    super().__init__(examples)
    self.skipped_qas_ids = list(skipped_qas_ids)
    self.skip_warnings = list(skip_warnings)


# ----------------------------------------------------------------------------
# Reading.

def _load_json(input_file):
  """The file's "data" list; unreadable JSON is the user's error, in one line."""
  if tfrecord_io.is_remote(input_file):
    import tensorflow as tf
    opener = lambda: tf.io.gfile.GFile(input_file, "r")
  else:
    if not os.path.exists(input_file):
      raise UserError("%s: no such file." % input_file)
    opener = lambda: open(input_file, "r", encoding="utf-8")
  try:
    with opener() as f:
      document = json.load(f)
  except (ValueError, UnicodeDecodeError) as e:
    raise UserError("%s: not a valid SQuAD JSON file: %s" % (input_file, e)) from None
  if not isinstance(document, dict) or not isinstance(document.get("data"), list):
    raise UserError('%s: not a SQuAD file: no top-level "data" list.' % input_file)
  return document["data"]


def _field(container, name, input_file, where, kind=None):
  """container[name], or a UserError naming the file and the question."""
  if not isinstance(container, dict) or name not in container:
    raise UserError('%s: %s has no "%s" field.' % (input_file, where, name))
  value = container[name]
  if kind is not None and not isinstance(value, kind):
    raise UserError('%s: %s: "%s" should be a %s, not %r.' %
                    (input_file, where, name, kind.__name__, value))
  return value


def split_document(text):
  """(words, start offset of each word) of a paragraph, split as the original."""
  words = []
  starts = []
  for match in _DOC_WORD.finditer(text):
    words.append(match.group())
    starts.append(match.start())
  return words, starts


def _word_at(starts, char_index):
  """Index of the word a character belongs to; a space belongs to the word
  before it (-1 before the first word), as the original's char-to-word map."""
  return bisect.bisect_right(starts, char_index) - 1


def _training_answer(qa, doc_tokens, starts, context, version_2_with_negative,
                     input_file, where):
  """(text, start word, end word, is_impossible) of a training question, or
  None with a warning message when the answer cannot be found in the words."""
  is_impossible = False
  if version_2_with_negative:
    is_impossible = bool(_field(qa, "is_impossible", input_file, where))
  if is_impossible:
    return ("", -1, -1, True), None
  answers = _field(qa, "answers", input_file, where, list)
  if len(answers) != 1:
    raise UserError("%s: %s: for training, each question should have exactly 1 "
                    "answer, found %d." % (input_file, where, len(answers)))
  text = _field(answers[0], "text", input_file, where, str)
  offset = _field(answers[0], "answer_start", input_file, where, int)
  last = offset + len(text) - 1
  if offset < 0 or offset >= len(context) or last >= len(context):
    raise UserError("%s: %s: answer_start %d (answer of %d characters) is outside "
                    "the context of %d characters." %
                    (input_file, where, offset, len(text), len(context)))
  # An empty text at offset 0 looks at the context's last character, as the
  # original's negative index does.
  start = _word_at(starts, offset)
  end = _word_at(starts, last % len(context))
  actual = " ".join(doc_tokens[start:end + 1])
  cleaned = " ".join(tokenization.whitespace_tokenize(text))
  if actual.find(cleaned) == -1:
    return None, "Could not find answer: '%s' vs. '%s'" % (actual, cleaned)
  return (text, start, end, False), None


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
  """Reads a SQuAD JSON file into SquadExamples (a list, in file order).

  For training, questions whose answer text cannot be recovered from the
  document words (mostly Unicode oddities) are skipped with a warning, as in
  the original; their ids are in the result's `skipped_qas_ids`.
  """
  data = _load_json(input_file)
  examples = SquadExamples()
  for article_index, article in enumerate(data):
    paragraphs = _field(article, "paragraphs", input_file,
                        "article #%d" % article_index, list)
    for paragraph_index, paragraph in enumerate(paragraphs):
      where = "paragraph #%d of article #%d" % (paragraph_index, article_index)
      context = _field(paragraph, "context", input_file, where, str)
      doc_tokens, starts = split_document(context)
      for qa_index, qa in enumerate(_field(paragraph, "qas", input_file, where, list)):
        question_where = "question #%d of %s" % (qa_index, where)
        qas_id = _field(qa, "id", input_file, question_where)
        question_where = "question %r" % (qas_id,)
        question_text = _field(qa, "question", input_file, question_where, str)
        example = SquadExample(qas_id=qas_id, question_text=question_text,
                               doc_tokens=doc_tokens)
        if is_training:
          answer, warning = _training_answer(qa, doc_tokens, starts, context,
                                             version_2_with_negative, input_file,
                                             question_where)
          if answer is None:
            logging.warning(warning)
            examples.skipped_qas_ids.append(qas_id)
            examples.skip_warnings.append(warning)
            continue
          (example.orig_answer_text, example.start_position, example.end_position,
           example.is_impossible) = answer
        examples.append(example)
  if examples.skipped_qas_ids:
    logging.warning("%s: skipped %d training question(s) whose answer text is not "
                    "in the context: %s", input_file, len(examples.skipped_qas_ids),
                    ", ".join(str(i) for i in examples.skipped_qas_ids))
  return examples


# ----------------------------------------------------------------------------
# Features.

class _DocumentTokenizer(object):
  """WordPiece tokens of document words, each distinct word tokenized once.

  Questions about the same paragraph share its word list, so the last
  document's result is kept too.
  """

  def __init__(self, tokenizer, max_words=1000000):
    self._tokenizer = tokenizer
    self._words = {}
    self._max_words = max_words
    self._last_doc = None
    self._last_result = None
    self._windows = {}

  def word(self, word):
    """(tokens, ids) of one document word."""
    cached = self._words.get(word)
    if cached is None:
      if len(self._words) >= self._max_words:
        self._words.clear()
      tokens = self._tokenizer.tokenize(word)
      cached = (tokens, self._tokenizer.convert_tokens_to_ids(tokens))
      self._words[word] = cached
    return cached

  def document(self, doc_tokens):
    """(all tokens, their ids, token -> word index, word -> first token index)."""
    if doc_tokens is self._last_doc:
      return self._last_result
    all_tokens, all_ids, tok_to_orig, orig_to_tok = [], [], [], []
    for i, word in enumerate(doc_tokens):
      tokens, ids = self.word(word)
      orig_to_tok.append(len(all_tokens))
      all_tokens.extend(tokens)
      all_ids.extend(ids)
      tok_to_orig.extend([i] * len(tokens))
    self._last_doc = doc_tokens
    self._last_result = (all_tokens, all_ids, tok_to_orig, orig_to_tok)
    self._windows = {}
    return self._last_result

  def windows(self, doc_tokens, max_tokens_for_doc, doc_stride):
    """Per window of the document (the last one given to `document`):
    (start, length, word index per token, is-max-context per token)."""
    key = (max_tokens_for_doc, doc_stride)
    cached = self._windows.get(key) if doc_tokens is self._last_doc else None
    if cached is None:
      _, _, tok_to_orig, _ = self.document(doc_tokens)
      spans = doc_spans_of(len(tok_to_orig), max_tokens_for_doc, doc_stride)
      best = max_context_spans(spans, len(tok_to_orig))
      cached = [(start, length, tok_to_orig[start:start + length],
                 [b == index for b in best[start:start + length]])
                for index, (start, length) in enumerate(spans)]
      self._windows[key] = cached
    return cached


def doc_spans_of(num_tokens, max_tokens_for_doc, doc_stride):
  """(start, length) of the sliding windows over a document's tokens."""
  spans = []
  start = 0
  while start < num_tokens:
    length = min(num_tokens - start, max_tokens_for_doc)
    spans.append((start, length))
    if start + length == num_tokens:
      break
    start += min(length, doc_stride)
  return spans


def max_context_spans(doc_spans, num_tokens):
  """For each document token, the window that gives it the most context.

  The score is min(left, right context) + 0.01 * window length; the first
  window with the strictly highest score wins. One vectorised pass per window
  instead of a scan of all windows per token (same double arithmetic).
  """
  if len(doc_spans) == 1:
    return [0] * num_tokens
  best = np.full(num_tokens, -1, np.int64)
  best_score = np.full(num_tokens, -np.inf)
  for index, (start, length) in enumerate(doc_spans):
    positions = np.arange(start, start + length)
    score = np.minimum(positions - start, start + length - 1 - positions) + 0.01 * length
    better = score > best_score[start:start + length]
    best_score[start:start + length][better] = score[better]
    best[start:start + length][better] = index
  return best.tolist()


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer,
                         orig_answer_text):
  """The first token span (by start, then longest) inside the word span whose
  tokens are exactly the tokenized answer, e.g. "1895" inside "(1895-1943)."."""
  answer_tokens = list(tokenizer.tokenize(orig_answer_text))
  width = len(answer_tokens)
  # Tokens contain no spaces, so comparing space-joined strings is comparing
  # lists, and only a span of the answer's width can match.
  for new_start in range(input_start, input_end + 1):
    new_end = new_start + width - 1
    if width and new_end <= input_end and doc_tokens[new_start:new_end + 1] == answer_tokens:
      return new_start, new_end
  return input_start, input_end


def _check_is_max_context(doc_spans, cur_span_index, position):
  """Whether window `cur_span_index` is the max-context one for `position`
  (windows as (start, length) pairs or objects with .start/.length)."""
  best_score = None
  best_index = None
  for index, span in enumerate(doc_spans):
    start, length = (span.start, span.length) if hasattr(span, "start") else span
    end = start + length - 1
    if position < start or position > end:
      continue
    score = min(position - start, end - position) + 0.01 * length
    if best_score is None or score > best_score:
      best_score = score
      best_index = index
  return cur_span_index == best_index


def _answer_token_span(example, doc, tokenizer):
  """Token positions of a training answer in the whole document."""
  all_tokens, _, _, orig_to_tok = doc
  if example.is_impossible:
    return -1, -1
  start = orig_to_tok[example.start_position]
  if example.end_position < len(example.doc_tokens) - 1:
    end = orig_to_tok[example.end_position + 1] - 1
  else:
    end = len(all_tokens) - 1
  return _improve_answer_span(all_tokens, start, end, tokenizer,
                              example.orig_answer_text)


def _log_feature(feature, is_training):
  logging.info("*** Example ***")
  logging.info("unique_id: %s", feature.unique_id)
  logging.info("example_index: %s", feature.example_index)
  logging.info("doc_span_index: %s", feature.doc_span_index)
  logging.info("tokens: %s", " ".join(feature.tokens))
  logging.info("token_to_orig_map: %s", " ".join(
      "%d:%d" % item for item in feature.token_to_orig_map.items()))
  logging.info("token_is_max_context: %s", " ".join(
      "%d:%s" % item for item in feature.token_is_max_context.items()))
  logging.info("input_ids: %s", " ".join(map(str, feature.input_ids)))
  logging.info("input_mask: %s", " ".join(map(str, feature.input_mask)))
  logging.info("segment_ids: %s", " ".join(map(str, feature.segment_ids)))
  if is_training and feature.is_impossible:
    logging.info("impossible example")
  elif is_training:
    logging.info("start_position: %d", feature.start_position)
    logging.info("end_position: %d", feature.end_position)
    logging.info("answer: %s", " ".join(
        feature.tokens[feature.start_position:feature.end_position + 1]))


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, output_fn):
  """Turns each example into one feature per document window and passes them
  to `output_fn` one at a time (nothing is kept); returns the count."""
  documents = _DocumentTokenizer(tokenizer)
  cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
  unique_id = FIRST_UNIQUE_ID
  for example_index, example in enumerate(examples):
    query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]
    query_ids = tokenizer.convert_tokens_to_ids(query_tokens)
    doc = documents.document(example.doc_tokens)
    all_tokens, all_ids, _, _ = doc
    if is_training:
      answer_start, answer_end = _answer_token_span(example, doc, tokenizer)

    max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
    if max_tokens_for_doc < 1:
      raise UserError("max_seq_length %d leaves no room for the document after "
                      "question %r (%d tokens) and [CLS], [SEP], [SEP]." %
                      (max_seq_length, example.qas_id, len(query_tokens)))
    windows = documents.windows(example.doc_tokens, max_tokens_for_doc, doc_stride)
    head_tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
    head_ids = [cls_id] + query_ids + [sep_id]
    offset = len(head_tokens)  # = len(query_tokens) + 2

    for span_index, (start, length, orig_index, is_max) in enumerate(windows):
      stop = start + length
      tokens = head_tokens + all_tokens[start:stop] + ["[SEP]"]
      input_ids = head_ids + all_ids[start:stop] + [sep_id]
      positions = range(offset, offset + length)
      token_to_orig_map = dict(zip(positions, orig_index))
      token_is_max_context = dict(zip(positions, is_max))
      used = len(input_ids)
      padding = max_seq_length - used
      input_mask = [1] * used + [0] * padding
      segment_ids = [0] * offset + [1] * (length + 1) + [0] * padding
      input_ids += [0] * padding

      start_position = end_position = None
      if is_training:
        if (not example.is_impossible and answer_start >= start and
            answer_end <= stop - 1):
          start_position = answer_start - start + offset
          end_position = answer_end - start + offset
        else:
          start_position = end_position = 0

      feature = InputFeatures(
          unique_id=unique_id, example_index=example_index,
          doc_span_index=span_index, tokens=tokens,
          token_to_orig_map=token_to_orig_map,
          token_is_max_context=token_is_max_context, input_ids=input_ids,
          input_mask=input_mask, segment_ids=segment_ids,
          start_position=start_position, end_position=end_position,
          is_impossible=example.is_impossible)
      if example_index < 20:
        _log_feature(feature, is_training)
      output_fn(feature)
      unique_id += 1
  return unique_id - FIRST_UNIQUE_ID


# ----------------------------------------------------------------------------
# Records.

def _varint(value):
  """Protobuf varint bytes; negative int64 values take ten bytes."""
  if 0 <= value < 128:
    return _ONE_BYTE[value]
  if value < 0:
    value += 1 << 64
  out = bytearray()
  while True:
    bits = value & 0x7F
    value >>= 7
    if value:
      out.append(bits | 0x80)
    else:
      out.append(bits)
      return bytes(out)


_ONE_BYTE = [bytes([v]) for v in range(128)]
_TABLE_SIZE = 1 << 16
_varint_table = []


def _packed_varints(values):
  """Concatenated varints. Values under 128 are their own byte (masks,
  segments, positions); other ids come from a lookup table."""
  if type(values) is not list:  # pylint: disable=unidiomatic-typecheck
    values = [int(v) for v in values]
  if not values:
    return b""
  low, high = min(values), max(values)
  if low >= 0 and high < 128:
    return bytes(values)
  if low >= 0 and high < _TABLE_SIZE:
    if not _varint_table:
      _varint_table.extend(_varint(v) for v in range(_TABLE_SIZE))
    return b"".join(map(_varint_table.__getitem__, values))
  return b"".join(_varint(v) for v in values)


def _length_delimited(field_number, payload):
  return _varint((field_number << 3) | 2) + _varint(len(payload)) + payload


# Tag bytes of length-delimited fields 1, 2 and 3.
_FIELD_1, _FIELD_2, _FIELD_3 = b"\x0a", b"\x12", b"\x1a"
_map_keys = {}


def serialize_int_example(features):
  """tf.train.Example bytes for {name: [int, ...]}, entries in key order.

  Keys sorted is what `SerializeToString(deterministic=True)` gives, so the
  bytes are the canonical form of what the original writes (its own map
  order is unspecified). Written by hand to avoid importing TensorFlow.
  """
  entries = []
  for name in sorted(features):
    key = _map_keys.get(name)
    if key is None:
      key = _map_keys[name] = _length_delimited(1, name.encode("utf-8"))
    packed = _packed_varints(features[name])
    int64_list = _FIELD_1 + _varint(len(packed)) + packed if packed else b""
    feature = _FIELD_3 + _varint(len(int64_list)) + int64_list  # Feature.int64_list
    entry = key + _FIELD_2 + _varint(len(feature)) + feature
    entries.append(_FIELD_1 + _varint(len(entry)) + entry)  # Features.feature map entry
  body = b"".join(entries)
  return _FIELD_1 + _varint(len(body)) + body  # Example.features


def feature_record(feature, is_training):
  """The record of one InputFeatures, with the original's feature names."""
  values = collections.OrderedDict()
  values["unique_ids"] = [feature.unique_id]
  values["input_ids"] = feature.input_ids
  values["input_mask"] = feature.input_mask
  values["segment_ids"] = feature.segment_ids
  if is_training:
    values["start_positions"] = [feature.start_position]
    values["end_positions"] = [feature.end_position]
    values["is_impossible"] = [1 if feature.is_impossible else 0]
  return serialize_int_example(values)


class FeatureWriter(object):
  """Writes InputFeatures to a TFRecord file, atomically.

  Records go to a temporary file that `close()` renames into place; `abort()`
  (or leaving a `with` block by an exception) removes it, so a failed run
  never leaves a truncated file under the final name.
  """

  def __init__(self, filename, is_training, batch_size=1024):
    self.filename = filename
    self.is_training = is_training
    self.num_features = 0
    self._batch = []
    self._batch_size = batch_size
    self._writer = tfrecord_io.RecordFileWriter(filename)

  def process_feature(self, feature):
    self.num_features += 1
    self._batch.append(feature_record(feature, self.is_training))
    if len(self._batch) >= self._batch_size:
      self._flush()

  def _flush(self):
    self._writer.write_records(self._batch)
    self._batch = []

  def close(self):
    self._flush()
    self._writer.commit()

  def abort(self):
    self._batch = []
    self._writer.abort()

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc_type is None:
      self.close()
    else:
      self.abort()


def name_to_features(seq_length, is_training):
  """What to parse from the records, as the original's input_fn."""
  import tensorflow as tf
  names = {
      "unique_ids": tf.io.FixedLenFeature([], tf.int64),
      "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
  }
  if is_training:
    names["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
    names["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
  return names


def read_features(input_file, seq_length, is_training, seed=0, input_context=None):
  """Feature dicts (int32) from a FeatureWriter file.

  As the original's input_fn: training repeats the records and shuffles them
  in a buffer of 100 (seeded here, so a resumed run sees the same batches);
  prediction reads them once, in order.
  """
  import tensorflow as tf
  from data_prep import pretraining_dataset
  spec = name_to_features(seq_length, is_training)
  d = tf.data.TFRecordDataset(input_file)
  if input_context is not None and input_context.num_input_pipelines > 1:
    d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  if is_training:
    d = d.repeat().shuffle(buffer_size=100, seed=seed)
  return d.map(lambda r: pretraining_dataset.decode_record(r, spec),
               num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


# ----------------------------------------------------------------------------
# Predictions.

RawResult = collections.namedtuple("RawResult",
                                   ["unique_id", "start_logits", "end_logits"])

_Candidate = collections.namedtuple(
    "_Candidate", ["feature_index", "start_index", "end_index", "start_logit",
                   "end_logit"])
_Entry = collections.namedtuple("_Entry", ["text", "start_logit", "end_logit"])


def _get_best_indexes(logits, n_best_size):
  """Indexes of the n largest logits; equal logits keep the lower index first
  (heapq.nlargest is documented to equal a stable reverse sort)."""
  return heapq.nlargest(n_best_size, range(len(logits)), key=logits.__getitem__)


def _compute_softmax(scores):
  """Softmax in Python doubles, summed in entry order as the original."""
  if not scores:
    return []
  top = max(scores)
  exps = [math.exp(s - top) for s in scores]
  total = 0.0
  for e in exps:
    total += e
  return [e / total for e in exps]


def _strip_spaces(text):
  """The text without " " and, per kept character, its index in `text`."""
  kept = []
  index_of = []
  for i, char in enumerate(text):
    if char != " ":
      kept.append(char)
      index_of.append(i)
  return "".join(kept), index_of


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
  """Maps a prediction in normalised tokens back onto the original text.

  `pred_text` (e.g. "steve smith") is found in the basic-tokenized
  `orig_text` (e.g. "Steve Smith's"), and its ends mapped back through the
  space-free forms of both. Whenever that fails the whole `orig_text` is
  returned, as the original does.
  """
  def fail(message, *args):
    if verbose_logging:
      logging.info(message, *args)
    return orig_text

  tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  tok_text = " ".join(tokenizer.tokenize(orig_text))
  start = tok_text.find(pred_text)
  if start == -1:
    return fail("Unable to find text: '%s' in '%s'", pred_text, orig_text)
  end = start + len(pred_text) - 1

  orig_ns_text, orig_ns_to_s = _strip_spaces(orig_text)
  tok_ns_text, tok_ns_to_s = _strip_spaces(tok_text)
  if len(orig_ns_text) != len(tok_ns_text):
    return fail("Length not equal after stripping spaces: '%s' vs '%s'",
                orig_ns_text, tok_ns_text)
  tok_s_to_ns = {s: ns for ns, s in enumerate(tok_ns_to_s)}

  def to_orig(position):
    ns = tok_s_to_ns.get(position)
    if ns is None or ns >= len(orig_ns_to_s):
      return None
    return orig_ns_to_s[ns]

  orig_start = to_orig(start)
  if orig_start is None:
    return fail("Couldn't map start position")
  orig_end = to_orig(end)
  if orig_end is None:
    return fail("Couldn't map end position")
  return orig_text[orig_start:orig_end + 1]


def _as_floats(values):
  """Logits as Python floats (float32 widened exactly), so sums are doubles."""
  if hasattr(values, "tolist"):
    return [float(v) for v in values.tolist()]
  return [float(v) for v in values]


def _candidates(features, results, n_best_size, max_answer_length, v2):
  """Valid (start, end) pairs of every window, and the null candidate (v2)."""
  candidates = []
  # (score, feature_index, start_logit, end_logit); the original's "large"
  # starting score, kept when an example has no window at all.
  null = (1000000, 0, 0, 0)
  for feature_index, feature in enumerate(features):
    result = results[feature.unique_id]
    start_logits = _as_floats(result.start_logits)
    end_logits = _as_floats(result.end_logits)
    if v2:
      null_score = start_logits[0] + end_logits[0]
      if null_score < null[0]:
        null = (null_score, feature_index, start_logits[0], end_logits[0])
    num_tokens = len(feature.tokens)
    orig_map = feature.token_to_orig_map
    max_context = feature.token_is_max_context
    ends = [e for e in _get_best_indexes(end_logits, n_best_size)
            if e < num_tokens and e in orig_map]
    for start in _get_best_indexes(start_logits, n_best_size):
      if start >= num_tokens or start not in orig_map:
        continue
      if not max_context.get(start, False):
        continue
      for end in ends:
        if end < start or end - start + 1 > max_answer_length:
          continue
        candidates.append(_Candidate(feature_index, start, end,
                                     start_logits[start], end_logits[end]))
  if v2:
    candidates.append(_Candidate(null[1], 0, 0, null[2], null[3]))
  return candidates, null


def _span_text(example, feature, candidate, do_lower_case, verbose_logging):
  """The original-text answer of a non-null candidate."""
  pieces = feature.tokens[candidate.start_index:candidate.end_index + 1]
  tok_text = " ".join(pieces).replace(" ##", "").replace("##", "")
  tok_text = " ".join(tok_text.strip().split())
  first = feature.token_to_orig_map[candidate.start_index]
  last = feature.token_to_orig_map[candidate.end_index]
  orig_text = " ".join(example.doc_tokens[first:last + 1])
  return get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)


def _nbest(example, features, candidates, null, n_best_size, do_lower_case,
           verbose_logging, v2):
  """The n-best entries (distinct texts, best first) of one example."""
  candidates = sorted(candidates, key=lambda c: c.start_logit + c.end_logit,
                      reverse=True)
  seen = set()
  entries = []
  for candidate in candidates:
    if len(entries) >= n_best_size:
      break
    if candidate.start_index > 0:
      text = _span_text(example, features[candidate.feature_index], candidate,
                        do_lower_case, verbose_logging)
      if text in seen:
        continue
    else:
      text = ""
    seen.add(text)
    entries.append(_Entry(text, candidate.start_logit, candidate.end_logit))
  if v2 and "" not in seen:
    entries.append(_Entry("", null[2], null[3]))
  if not entries:
    entries.append(_Entry("empty", 0.0, 0.0))
  return entries


def _predict_example(example, features, results, n_best_size, max_answer_length,
                     do_lower_case, v2, threshold, verbose_logging):
  """(prediction, n-best JSON list, null score difference or None)."""
  candidates, null = _candidates(features, results, n_best_size,
                                 max_answer_length, v2)
  entries = _nbest(example, features, candidates, null, n_best_size,
                   do_lower_case, verbose_logging, v2)
  probs = _compute_softmax([e.start_logit + e.end_logit for e in entries])
  nbest_json = []
  for entry, prob in zip(entries, probs):
    output = collections.OrderedDict()
    output["text"] = entry.text
    output["probability"] = prob
    output["start_logit"] = entry.start_logit
    output["end_logit"] = entry.end_logit
    nbest_json.append(output)
  if not v2:
    return entries[0].text, nbest_json, None
  best = next((e for e in entries if e.text), None)
  if best is None:
    # No span at all (the original would crash): predict no answer, as if
    # the best span scored 0.
    return "", nbest_json, null[0]
  score_diff = null[0] - best.start_logit - best.end_logit
  prediction = "" if score_diff > threshold else best.text
  return prediction, nbest_json, score_diff


def write_json_atomically(path, obj):
  """`json.dumps(obj, indent=4)` plus a newline, via a temporary file."""
  text = json.dumps(obj, indent=4) + "\n"
  temporary = "%s.tmp-%d" % (path, os.getpid())
  if tfrecord_io.is_remote(path):
    import tensorflow as tf
    with tf.io.gfile.GFile(temporary, "w") as f:
      f.write(text)
    tf.io.gfile.rename(temporary, path, overwrite=True)
    return
  try:
    with open(temporary, "w", encoding="utf-8") as f:
      f.write(text)
    os.replace(temporary, path)
  except BaseException:
    if os.path.exists(temporary):
      os.remove(temporary)
    raise


def write_predictions(all_examples, all_features, all_results, n_best_size,
                      max_answer_length, do_lower_case, output_prediction_file,
                      output_nbest_file, output_null_log_odds_file,
                      version_2_with_negative=False, null_score_diff_threshold=0.0,
                      verbose_logging=False):
  """Writes predictions.json, nbest_predictions.json and (v2) null_odds.json
  exactly as the original; returns (predictions, nbest, null_odds) dicts."""
  logging.info("Writing predictions to: %s", output_prediction_file)
  logging.info("Writing nbest to: %s", output_nbest_file)
  features_of = collections.defaultdict(list)
  for feature in all_features:
    features_of[feature.example_index].append(feature)
  results = {result.unique_id: result for result in all_results}

  predictions = collections.OrderedDict()
  nbest = collections.OrderedDict()
  null_odds = collections.OrderedDict()
  for example_index, example in enumerate(all_examples):
    features = features_of[example_index]
    missing = [f.unique_id for f in features if f.unique_id not in results]
    if missing:
      raise UserError("No model output for feature %d of question %r." %
                      (missing[0], example.qas_id))
    prediction, nbest_json, score_diff = _predict_example(
        example, features, results, n_best_size, max_answer_length,
        do_lower_case, version_2_with_negative, null_score_diff_threshold,
        verbose_logging)
    predictions[example.qas_id] = prediction
    nbest[example.qas_id] = nbest_json
    if version_2_with_negative:
      null_odds[example.qas_id] = score_diff

  write_json_atomically(output_prediction_file, predictions)
  write_json_atomically(output_nbest_file, nbest)
  if version_2_with_negative:
    write_json_atomically(output_null_log_odds_file, null_odds)
  return predictions, nbest, null_odds
