"""Tagged sentences as model inputs, and model outputs back as tags.

Each word becomes its WordPieces (a word the tokenizer makes nothing of, a
lone control character say, becomes [UNK]: no word is dropped). The paper
tags CoNLL-2003 by each word's first piece: the label sits on that piece and
the other pieces carry none (no loss, no prediction). A sentence longer than
a sequence is cut into windows of its pieces as SQuAD's documents are
(tasks/sliding_windows.py: a new window every `doc_stride` pieces), and each
word is labelled, in training and prediction, only in the window that gives
its first piece the most context: every word exactly once, none truncated.
"""

import collections

from absl import logging
import numpy as np

from plumbing import tf_example
from plumbing import tfrecord
from tasks import sliding_windows
from tasks.ner import conll

NO_LABEL = -1  # tag_ids of [CLS], [SEP], a word's later pieces and padding.
_RECORD_BATCH = 4096

# One sequence of one sentence: `positions` are the sequence positions of the
# words it labels and `words` their indexes in the sentence.
Window = collections.namedtuple("Window", ["sentence", "input_ids", "positions", "words"])


def example_spec(max_seq_length):
  shape = [max_seq_length]
  return tf_example.ExampleSpec([("input_ids", "int64", shape), ("input_mask", "int64", shape),
                                 ("segment_ids", "int64", shape),
                                 ("tag_ids", "int64", shape)])


def label_list_of(sentences):
  """The IOB2 tags of the training sentences: O first, then by type and
  prefix (B- before I-), so the list is the same however the file is
  ordered."""
  kinds = sorted({conll.split_tag(t)[1] for s in sentences for t in conll.to_iob2(s.tags)}
                 - {""})
  return ["O"] + [prefix + kind for kind in kinds for prefix in ("B-", "I-")]


def word_pieces(tokenizer, sentences):
  """Per sentence, per word, the ids of its WordPieces ([UNK] for none)."""
  words = [w for s in sentences for w in s.words]
  ids, splits = tokenizer.tokenize_to_ids_batch(words)
  unk = tokenizer.vocab["[UNK]"]
  pieces = [ids[splits[i]:splits[i + 1]].tolist() or [unk] for i in range(len(words))]
  out, start = [], 0
  for sentence in sentences:
    out.append(pieces[start:start + len(sentence.words)])
    start += len(sentence.words)
  return out


def windows_of(sentence_index, pieces, max_seq_length, doc_stride, cls_id, sep_id):
  """The windows of one sentence (`pieces`: per word, its piece ids)."""
  flat = [p for word in pieces for p in word]
  word_of = np.repeat(np.arange(len(pieces)), [len(w) for w in pieces])
  first = np.concatenate([[0], np.cumsum([len(w) for w in pieces])[:-1]]).astype(int)
  spans = sliding_windows.spans(len(flat), max_seq_length - 2, doc_stride)
  best = sliding_windows.max_context_windows(spans, len(flat))
  windows = []
  for index, (start, end) in enumerate(spans):
    labelled = [p for p in first if best[p] == index]
    windows.append(Window(sentence_index, [cls_id] + flat[start:end] + [sep_id],
                          [1 + p - start for p in labelled],
                          [int(word_of[p]) for p in labelled]))
  return windows


def windows_of_sentences(sentences, tokenizer, max_seq_length, doc_stride):
  """Every sentence's windows, in order."""
  cls_id, sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
  windows = []
  for index, pieces in enumerate(word_pieces(tokenizer, sentences)):
    windows += windows_of(index, pieces, max_seq_length, doc_stride, cls_id, sep_id)
  return windows


def write_records(sentences, windows, label_list, max_seq_length, path):
  """One record per window: ids, mask, segment ids (all 0) and the tag id at
  each labelled position (NO_LABEL elsewhere); written whole or not at all."""
  spec = example_spec(max_seq_length)
  label_map = {label: i for i, label in enumerate(label_list)}
  tags = [conll.to_iob2(s.tags) for s in sentences]
  with tfrecord.atomic_writers([path]) as (writer,):
    for begin in range(0, len(windows), _RECORD_BATCH):
      chunk = windows[begin:begin + _RECORD_BATCH]
      ints, _ = spec.empty_columns(len(chunk))
      ids = ints[:, spec.int_columns["input_ids"]]
      mask = ints[:, spec.int_columns["input_mask"]]
      tag_ids = ints[:, spec.int_columns["tag_ids"]]
      tag_ids[:] = NO_LABEL
      for row, window in enumerate(chunk):
        ids[row, :len(window.input_ids)] = window.input_ids
        mask[row, :len(window.input_ids)] = 1
        sentence_tags = tags[window.sentence]
        tag_ids[row, window.positions] = [label_map.get(sentence_tags[w], 0)
                                          for w in window.words]
      writer.write_batch(*spec.encode_batch(ints))
  logging.info("Wrote %d windows of %d sentences to %s", len(windows), len(sentences), path)


def word_predictions(sentences, windows, logits):
  """Per sentence, per word, (label index, probability), from the windows'
  logits [windows, seq, labels] at their labelled positions."""
  out = [[None] * len(s.words) for s in sentences]
  for window, window_logits in zip(windows, logits):
    if not window.positions:
      continue
    scores = window_logits[window.positions].astype(np.float64)
    probabilities = np.exp(scores - scores.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    for word, p in zip(window.words, probabilities):
      label = int(np.argmax(p))
      out[window.sentence][word] = (label, float(p[label]))
  return out
