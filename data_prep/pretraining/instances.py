"""The masked-LM + next-sentence instance algorithm of the original release.

Same decisions, same random stream, same instances as the original
`create_pretraining_data.py`, but on integer ids in flat arrays and compiled
with numba instead of Python lists of strings. A corpus is held as:

  tokens:      int32, every token id of every sentence, in reading order;
  seg_offsets: int64, sentence s is tokens[seg_offsets[s]:seg_offsets[s + 1]];
  doc_offsets: int64, document d is sentences doc_offsets[d]..doc_offsets[d + 1].

A document's sentences, and so its tokens, are contiguous, which makes every
A or B segment of an instance a single [start, end) range of `tokens`.

What the original did, step by step (each step consumes the shared random
stream in the same order, which is what makes the output identical):
  1. shuffle the documents;
  2. `dupe_factor` times, for every document in shuffled order, pack its
     sentences into chunks of about `target_seq_length` tokens (shorter with
     probability `short_seq_prob`), split each chunk into A and B (B from a
     random other document half of the time, or when the chunk has one
     sentence; unused sentences are then put back), truncate the pair from a
     random end of the longer side, and mask it (80% [MASK], 10% kept, 10% a
     random vocabulary word; whole words together with whole-word masking);
  3. shuffle all instances.
"""

import numba
import numpy as np

from data_prep.pretraining import python_random as pr


class Instances(object):
  """Growable columnar storage of instances, about 200 bytes each.

  An instance is [CLS] A [SEP] B [SEP] with A = tokens[a_start:a_end] and
  B = tokens[b_start:b_end] of the corpus, plus its masked positions, the
  original ids there (labels) and what replaced them. Rows of input ids are
  only materialised while writing.
  """

  _COLUMNS = ("spans", "is_random_next", "num_masked", "masked_positions",
              "masked_labels", "masked_replacements")

  def __init__(self, tokens, cls_id, sep_id, max_seq_length,
               max_predictions_per_seq, capacity=1024):
    self.tokens = tokens  # The corpus ids the spans point into.
    self.cls_id = cls_id
    self.sep_id = sep_id
    if max_seq_length > np.iinfo(np.int16).max:
      raise ValueError("max_seq_length must be below 32768.")
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq
    self.count = 0
    self._allocate(capacity)

  def _allocate(self, capacity):
    p = self.max_predictions_per_seq
    self.spans = np.zeros((capacity, 4), np.int64)   # a_start, a_end, b_start, b_end
    self.is_random_next = np.zeros(capacity, np.int8)
    self.num_masked = np.zeros(capacity, np.int16)
    self.masked_positions = np.zeros((capacity, p), np.int16)
    self.masked_labels = np.zeros((capacity, p), np.int32)
    self.masked_replacements = np.zeros((capacity, p), np.int32)

  @property
  def capacity(self):
    return len(self.is_random_next)

  def grow(self, min_capacity):
    old = [getattr(self, name) for name in self._COLUMNS]
    self._allocate(max(min_capacity, 2 * self.capacity))
    for name, column in zip(self._COLUMNS, old):
      getattr(self, name)[:self.count] = column[:self.count]

  def trim(self):
    """Releases unused capacity."""
    for name in self._COLUMNS:
      setattr(self, name, getattr(self, name)[:self.count].copy())

  def features(self, i):
    """Instance i's input ids (masked), segments and labels, for logging."""
    row = np.zeros(self.max_seq_length, np.int64)
    segments = np.zeros(self.max_seq_length, np.int64)
    length = fill_row(row, segments, self.tokens, self.spans[i], self.cls_id,
                       self.sep_id)
    m = self.num_masked[i]
    row[self.masked_positions[i, :m]] = self.masked_replacements[i, :m]
    return {"input_ids": row, "length": length, "segment_ids": segments,
            "masked_lm_positions": self.masked_positions[i, :m].astype(np.int64),
            "masked_lm_ids": self.masked_labels[i, :m].astype(np.int64),
            "next_sentence_labels": int(self.is_random_next[i])}


@numba.njit(cache=True)
def fill_row(row, segments, tokens, span, cls_id, sep_id):
  """Writes [CLS] A [SEP] B [SEP] and its segment ids; returns the length."""
  a_start, a_end, b_start, b_end = span[0], span[1], span[2], span[3]
  len_a = a_end - a_start
  len_b = b_end - b_start
  length = len_a + len_b + 3
  row[0] = cls_id
  row[1:1 + len_a] = tokens[a_start:a_end]
  row[1 + len_a] = sep_id
  row[2 + len_a:2 + len_a + len_b] = tokens[b_start:b_end]
  row[length - 1] = sep_id
  row[length:] = 0
  segments[:2 + len_a] = 0
  segments[2 + len_a:length] = 1
  segments[length:] = 0
  return length


@numba.njit(cache=True)
def _truncate_pair(state, a_start, a_end, b_start, b_end, max_num_tokens):
  """Trims the longer side, from its front or back at random, until it fits."""
  while (a_end - a_start) + (b_end - b_start) > max_num_tokens:
    trim_a = (a_end - a_start) > (b_end - b_start)
    from_front = pr.random_float(state) < 0.5
    if trim_a:
      if from_front:
        a_start += 1
      else:
        a_end -= 1
    else:
      if from_front:
        b_start += 1
      else:
        b_end -= 1
  return a_start, a_end, b_start, b_end


@numba.njit(cache=True)
def mask_row(state, row, length, first_b, is_continuation, random_word_ids,
              mask_id, masked_lm_prob, max_predictions, do_whole_word_mask,
              out_positions, out_labels, out_replacements):
  """Masks one instance in place; returns the count of masked positions.

  Writes the masked positions in increasing order, with the original ids
  (labels) and the ids that replaced them.
  """
  sep_a = first_b - 1
  # Candidates are every position but [CLS], the middle [SEP] and the last
  # [SEP]. With whole-word masking a "##" piece joins the previous candidate
  # group, even across the middle [SEP] (as in the original).
  groups_start = np.empty(length, np.int64)
  groups_end = np.empty(length, np.int64)
  positions = np.empty(length, np.int64)
  num_groups = 0
  num_positions = 0
  for p in range(1, length - 1):
    if p == sep_a:
      continue
    positions[num_positions] = p
    if do_whole_word_mask and num_groups >= 1 and is_continuation[row[p]]:
      groups_end[num_groups - 1] = num_positions + 1
    else:
      groups_start[num_groups] = num_positions
      groups_end[num_groups] = num_positions + 1
      num_groups += 1
    num_positions += 1

  order = np.arange(num_groups)
  pr.shuffle(state, order)

  num_to_predict = min(max_predictions,
                       max(1, int(np.rint(length * masked_lm_prob))))
  labels = row[:length].copy()
  chosen = np.empty(num_to_predict, np.int64)
  num_chosen = 0
  for g in order:
    if num_chosen >= num_to_predict:
      break
    size = groups_end[g] - groups_start[g]
    if num_chosen + size > num_to_predict:
      continue  # The whole word would not fit: skip it, keep looking.
    for c in range(groups_start[g], groups_end[g]):
      p = positions[c]
      if pr.random_float(state) < 0.8:
        row[p] = mask_id
      elif pr.random_float(state) < 0.5:
        pass  # Keep the original token.
      else:
        row[p] = random_word_ids[pr.randint(state, 0, len(random_word_ids) - 1)]
      chosen[num_chosen] = p
      num_chosen += 1

  chosen_sorted = np.sort(chosen[:num_chosen])
  for k in range(num_chosen):
    p = chosen_sorted[k]
    out_positions[k] = p
    out_labels[k] = labels[p]
    out_replacements[k] = row[p]
  return num_chosen


@numba.njit(cache=True)
def _instances_from_documents(
    state, tokens, seg_offsets, doc_offsets, doc_order, doc_lo, doc_hi,
    is_continuation, random_word_ids, cls_id, sep_id, mask_id, max_seq_length,
    short_seq_prob, masked_lm_prob, max_predictions, do_whole_word_mask,
    spans, is_random_next, num_masked, masked_positions, masked_labels,
    masked_replacements, count):
  """Appends the instances of documents doc_lo..doc_hi-1 (shuffled order).

  Stops early, before a document that might not fit in the output arrays,
  and returns (new count, next document index).
  """
  capacity = len(is_random_next)
  num_docs = len(doc_order)
  max_num_tokens = max_seq_length - 3
  row = np.zeros(max_seq_length, np.int32)
  segments = np.zeros(max_seq_length, np.int32)
  for document_index in range(doc_lo, doc_hi):
    doc = doc_order[document_index]
    first_seg = doc_offsets[doc]
    num_segs = doc_offsets[doc + 1] - first_seg
    if count + num_segs > capacity:  # At most one instance per sentence.
      return count, document_index

    target_seq_length = max_num_tokens
    if pr.random_float(state) < short_seq_prob:
      target_seq_length = pr.randint(state, 2, max_num_tokens)

    chunk_first = 0
    chunk_size = 0
    chunk_tokens = 0
    i = 0
    while i < num_segs:
      if chunk_size == 0:
        chunk_first = i
      chunk_size += 1
      s = first_seg + i
      chunk_tokens += seg_offsets[s + 1] - seg_offsets[s]
      if i == num_segs - 1 or chunk_tokens >= target_seq_length:
        a_end_seg = 1
        if chunk_size >= 2:
          a_end_seg = pr.randint(state, 1, chunk_size - 1)
        a_start = seg_offsets[first_seg + chunk_first]
        a_end = seg_offsets[first_seg + chunk_first + a_end_seg]

        random_next = chunk_size == 1 or pr.random_float(state) < 0.5
        if random_next:
          target_b_length = target_seq_length - (a_end - a_start)
          other = 0
          for _ in range(10):  # Avoid the current document, without insisting.
            other = pr.randint(state, 0, num_docs - 1)
            if other != document_index:
              break
          other_doc = doc_order[other]
          other_first = doc_offsets[other_doc]
          other_segs = doc_offsets[other_doc + 1] - other_first
          start_seg = pr.randint(state, 0, other_segs - 1)
          b_start = seg_offsets[other_first + start_seg]
          b_end = b_start
          for j in range(start_seg, other_segs):
            b_end = seg_offsets[other_first + j + 1]
            if b_end - b_start >= target_b_length:
              break
          # The chunk's B sentences were not used: read them again next.
          i -= chunk_size - a_end_seg
        else:
          b_start = a_end
          b_end = seg_offsets[first_seg + chunk_first + chunk_size]

        a_start, a_end, b_start, b_end = _truncate_pair(
            state, a_start, a_end, b_start, b_end, max_num_tokens)

        span = spans[count]
        span[0] = a_start
        span[1] = a_end
        span[2] = b_start
        span[3] = b_end
        length = fill_row(row, segments, tokens, span, cls_id, sep_id)
        is_random_next[count] = 1 if random_next else 0
        num_masked[count] = mask_row(
            state, row, length, a_end - a_start + 2, is_continuation,
            random_word_ids, mask_id, masked_lm_prob, max_predictions,
            do_whole_word_mask, masked_positions[count], masked_labels[count],
            masked_replacements[count])
        count += 1
        chunk_size = 0
        chunk_tokens = 0
      i += 1
  return count, doc_hi


class Vocabulary(object):
  """What the algorithm needs from the vocabulary, as arrays."""

  def __init__(self, vocab):
    for token in ("[CLS]", "[SEP]", "[MASK]"):
      if token not in vocab:
        raise ValueError("The vocabulary has no %s token." % token)
    self.cls_id = vocab["[CLS]"]
    self.sep_id = vocab["[SEP]"]
    self.mask_id = vocab["[MASK]"]
    size = max(vocab.values()) + 1
    self.is_continuation = np.zeros(size, np.bool_)
    for token, index in vocab.items():
      if token.startswith("##"):
        self.is_continuation[index] = True
    # The original draws random words from the distinct tokens in file order
    # and maps each back through the vocabulary.
    self.random_word_ids = np.array(list(vocab.values()), np.int32)


def shuffle_documents(state, num_docs):
  order = np.arange(num_docs, dtype=np.int64)
  pr.shuffle(state, order)
  return order


def create_instances(state, corpus, vocabulary, max_seq_length,
                     max_predictions_per_seq, dupe_factor, short_seq_prob,
                     masked_lm_prob, do_whole_word_mask, progress=None,
                     docs_per_call=2000):
  """Runs steps 2 (for all dupes) of the algorithm; returns `Instances`.

  `corpus` has `tokens`, `seg_offsets`, `doc_offsets`, `doc_order`.
  `progress(dupe, docs_done, instances)` is called between batches.
  """
  num_docs = len(corpus.doc_order)
  estimate = max(1024, int(dupe_factor * len(corpus.tokens) / max(1, max_seq_length - 3) * 1.3))
  out = Instances(corpus.tokens, vocabulary.cls_id, vocabulary.sep_id,
                  max_seq_length, max_predictions_per_seq, capacity=estimate)
  for dupe in range(dupe_factor):
    doc = 0
    while doc < num_docs:
      hi = min(num_docs, doc + docs_per_call)
      out.count, doc = _instances_from_documents(
          state, corpus.tokens, corpus.seg_offsets, corpus.doc_offsets,
          corpus.doc_order, doc, hi, vocabulary.is_continuation,
          vocabulary.random_word_ids, vocabulary.cls_id, vocabulary.sep_id,
          vocabulary.mask_id, max_seq_length, short_seq_prob, masked_lm_prob,
          max_predictions_per_seq, do_whole_word_mask, out.spans,
          out.is_random_next, out.num_masked, out.masked_positions,
          out.masked_labels, out.masked_replacements, out.count)
      if doc < hi:  # Stopped for room: the next document needs more.
        first = corpus.doc_offsets[corpus.doc_order[doc]]
        need = corpus.doc_offsets[corpus.doc_order[doc] + 1] - first
        out.grow(out.count + need)
      if progress is not None:
        progress(dupe, doc, out.count)
  out.trim()
  return out


def shuffle_instances(state, count):
  order = np.arange(count, dtype=np.int64)
  pr.shuffle(state, order)
  return order
