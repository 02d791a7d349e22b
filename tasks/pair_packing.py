"""A pair of texts as one sequence, the original's way: [CLS] A [SEP] B [SEP].

The pair is truncated longest-first to fit; a text without a second one (or
whose second has no tokens) is [CLS] A [SEP]. `pack_tokens` packs one pair as
run_classifier.py's convert_single_example does; `pack_batch` packs many at
once with the tokenizer's bulk path and array operations. Classification,
SWAG and extract_features pack their texts here; serving/packing.py packs
the same sequences with TensorFlow ops.
"""

import numpy as np

from data_prep import tokenization


def truncate_seq_pair(tokens_a, tokens_b, max_length):
  """Shortens the pair in place to at most `max_length` tokens in total,
  one token at a time from the end of the longer one (B on ties): a short
  text keeps all its tokens, which carry more per token."""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


def pack_tokens(tokenizer, text_a, text_b, max_seq_length):
  """(tokens, segment_ids) of [CLS] A [SEP] (B [SEP]), unpadded: the pair
  truncated longest-first, or A alone cut to fit when B is empty or has no
  tokens."""
  tokens_a = tokenizer.tokenize(text_a)
  tokens_b = tokenizer.tokenize(text_b) if text_b else None
  if tokens_b:
    truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
  else:
    tokens_a = tokens_a[:max_seq_length - 2]
  tokens = [tokenization.CLS_TOKEN] + tokens_a + [tokenization.SEP_TOKEN]
  segment_ids = [0] * len(tokens)
  if tokens_b:
    tokens += tokens_b + [tokenization.SEP_TOKEN]
    segment_ids += [1] * (len(tokens_b) + 1)
  return tokens, segment_ids


def truncated_pair_lengths(len_a, len_b, budget):
  """The lengths truncate_seq_pair leaves (arrays, B non-empty): within
  `budget`, the pair is kept; else a side no longer than half the budget
  keeps its length and the other gets the rest; else both end at half (A
  takes the odd token, as ties shorten B first)."""
  fits = len_a + len_b <= budget
  half = budget // 2
  a = np.where(len_b <= half, budget - len_b, np.where(len_a <= half, len_a, budget - half))
  a = np.where(fits, len_a, a)
  return a, np.where(fits, len_b, budget - a)


def pack_batch(tokenizer, texts_a, texts_b, max_seq_length):
  """(input_ids, input_mask, segment_ids), int64 [len(texts_a),
  max_seq_length]: pack_tokens' sequence of each (A, B) pair (B None or
  empty: A alone) as ids, zero-padded, tokenized in two calls of the bulk
  path."""
  flat_a, splits_a = tokenizer.tokenize_to_ids_batch(texts_a)
  flat_b, splits_b = tokenizer.tokenize_to_ids_batch([t or "" for t in texts_b])
  cls_id, sep_id = tokenizer.convert_tokens_to_ids([tokenization.CLS_TOKEN,
                                                    tokenization.SEP_TOKEN])
  len_a, len_b = np.diff(splits_a), np.diff(splits_b)
  pair_a, pair_b = truncated_pair_lengths(len_a, len_b, max_seq_length - 3)
  len_a = np.where(len_b > 0, pair_a, np.minimum(len_a, max_seq_length - 2))
  len_b = np.where(len_b > 0, pair_b, 0)
  # Row i: [CLS], len_a[i] tokens of A, [SEP], then len_b[i] of B and [SEP].
  position = np.arange(max_seq_length)[None, :]
  end_a = 1 + len_a[:, None]
  end_b = end_a + 1 + len_b[:, None]
  in_a = (position >= 1) & (position < end_a)
  in_b = (position > end_a) & (position < end_b)
  ids = np.zeros((len(texts_a), max_seq_length), np.int64)
  ids[:, 0] = cls_id
  ids[in_a] = flat_a[(splits_a[:-1, None] + position - 1)[in_a]]
  ids[in_b] = flat_b[(splits_b[:-1, None] + position - end_a - 1)[in_b]]
  ids[position == end_a] = sep_id
  ids[(position == end_b) & (len_b[:, None] > 0)] = sep_id
  mask = (position < np.where(len_b > 0, end_b[:, 0] + 1, end_a[:, 0] + 1)[:, None])
  segments = (position > end_a) & mask
  return ids, mask.astype(np.int64), segments.astype(np.int64)
