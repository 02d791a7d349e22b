"""SQuAD features: each question's document in windows, as the original made them.

`InputFeatures` and `convert_examples_to_features` keep the original
`run_squad.py`'s names and results: the same windows (`doc_stride`), maps
back to the words (`token_to_orig_map`, `token_is_max_context`), answer
positions and unique ids. `FeatureWriter` writes them as the original's
records, in the canonical (sorted-map) serialisation; `reading_spec` is what
training and prediction read back.

Faster, same output: each document is tokenized once (not once per question)
by the tokenizer's compiled bulk path, its windows and every token's "max
context" window (tasks/sliding_windows.py) are found once per document and
settings, and features are streamed to `output_fn` rather than kept.
"""

from absl import logging
import numpy as np

from plumbing.errors import UserError
from plumbing import tf_example
from plumbing import tfrecord
from tasks import sliding_windows

FIRST_UNIQUE_ID = 1000000000
_QUESTION_BATCH = 4096


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


class _DocumentTokenizer(object):
  """WordPiece tokens of documents, each document tokenized once.

  Questions about the same paragraph share its word list, so the last
  document's result is kept. A document's words go through the tokenizer's
  bulk path in one call (each word as a text of its own, as the original
  tokenizes them one by one), and the maps between words and tokens come
  from its row splits.
  """

  def __init__(self, tokenizer):
    self._tokenizer = tokenizer
    self._token_of_id = None
    self._last_doc = None
    self._last_result = None
    self._windows = {}

  def _tokens_of(self, ids):
    if self._token_of_id is None:
      inv_vocab = self._tokenizer.inv_vocab
      table = np.empty(max(inv_vocab, default=-1) + 1, object)
      for i, token in inv_vocab.items():
        table[i] = token
      self._token_of_id = table
    return self._token_of_id[ids].tolist()

  def texts(self, texts):
    """[(tokens, ids)] of each text."""
    ids, splits = self._tokenizer.tokenize_to_ids_batch(texts)
    tokens, ids = self._tokens_of(ids), ids.tolist()
    return [(tokens[a:b], ids[a:b]) for a, b in zip(splits[:-1], splits[1:])]

  def document(self, doc_tokens):
    """(all tokens, their ids, token -> word index, word -> first token index)."""
    if doc_tokens is self._last_doc:
      return self._last_result
    ids, splits = self._tokenizer.tokenize_to_ids_batch(doc_tokens)
    tok_to_orig = np.repeat(np.arange(len(doc_tokens)), np.diff(splits)).tolist()
    self._last_doc = doc_tokens
    self._last_result = (self._tokens_of(ids), ids.tolist(), tok_to_orig,
                         splits[:-1].tolist())
    self._windows = {}
    return self._last_result

  def windows(self, doc_tokens, max_tokens_for_doc, doc_stride):
    """Per window of the document (the last one given to `document`):
    (start, end, word index per token, is-max-context per token)."""
    key = (max_tokens_for_doc, doc_stride)
    cached = self._windows.get(key) if doc_tokens is self._last_doc else None
    if cached is None:
      _, _, tok_to_orig, _ = self.document(doc_tokens)
      spans = sliding_windows.spans(len(tok_to_orig), max_tokens_for_doc, doc_stride)
      best = sliding_windows.max_context_windows(spans, len(tok_to_orig))
      cached = [(start, end, tok_to_orig[start:end], [b == index for b in best[start:end]])
                for index, (start, end) in enumerate(spans)]
      self._windows[key] = cached
    return cached


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
    if example_index % _QUESTION_BATCH == 0:  # The next questions, in one call.
      questions = documents.texts([e.question_text for e in
                                   examples[example_index:example_index + _QUESTION_BATCH]])
    query_tokens, query_ids = questions[example_index % _QUESTION_BATCH]
    query_tokens, query_ids = query_tokens[:max_query_length], query_ids[:max_query_length]
    doc = documents.document(example.doc_tokens)
    all_tokens, all_ids, _, _ = doc
    if is_training:
      answer_start, answer_end = _answer_token_span(example, doc, tokenizer)

    max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
    if max_tokens_for_doc < 1:
      raise UserError("max_seq_length %d leaves no room for the document after "
                      "question %r (%d tokens) and [CLS], [SEP], [SEP]." %
                      (max_seq_length, example.qas_id, len(query_tokens)))
    doc_windows = documents.windows(example.doc_tokens, max_tokens_for_doc, doc_stride)
    head_tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
    head_ids = [cls_id] + query_ids + [sep_id]
    offset = len(head_tokens)  # = len(query_tokens) + 2

    for span_index, (start, stop, orig_index, is_max) in enumerate(doc_windows):
      length = stop - start
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

def example_spec(seq_length, is_training):
  """The records' features, in the canonical order (sorted by name) that
  `SerializeToString(deterministic=True)` gives the original's records."""
  seq = [seq_length]
  features = [("unique_ids", "int64", []), ("input_ids", "int64", seq),
              ("input_mask", "int64", seq), ("segment_ids", "int64", seq)]
  if is_training:
    features += [("start_positions", "int64", []), ("end_positions", "int64", []),
                 ("is_impossible", "int64", [])]
  return tf_example.ExampleSpec(sorted(features))


def feature_row(feature, is_training):
  """The record values of one InputFeatures, by the original's feature names."""
  row = {"unique_ids": feature.unique_id, "input_ids": feature.input_ids,
         "input_mask": feature.input_mask, "segment_ids": feature.segment_ids}
  if is_training:
    row.update(start_positions=feature.start_position, end_positions=feature.end_position,
               is_impossible=1 if feature.is_impossible else 0)
  return row


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
    self._rows = []
    self._batch_size = batch_size
    self._spec = None
    self._writer = tfrecord.RecordFileWriter(filename)

  def process_feature(self, feature):
    if self._spec is None:
      self._spec = example_spec(len(feature.input_ids), self.is_training)
    self.num_features += 1
    self._rows.append(feature_row(feature, self.is_training))
    if len(self._rows) >= self._batch_size:
      self._flush()

  def _flush(self):
    if self._rows:
      self._writer.write_batch(*self._spec.encode_batch(*self._spec.columns_of(self._rows)))
    self._rows = []

  def close(self):
    self._flush()
    self._writer.commit()

  def abort(self):
    self._rows = []
    self._writer.abort()

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc_type is None:
      self.close()
    else:
      self.abort()


def reading_spec(seq_length, is_training):
  """The features the original's input_fn parsed (not is_impossible):
  training reads them repeated and shuffled in a buffer of 100 (seeded, so
  a resumed run sees the same batches), prediction once, in order
  (plumbing.tf_example.read_records)."""
  return tf_example.ExampleSpec(
      [f for f in example_spec(seq_length, is_training).features if f.name != "is_impossible"])
