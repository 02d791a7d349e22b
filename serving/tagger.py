"""A fine-tuned tagger (named-entity recognition) as a SavedModel for TF
Serving: raw text in, entities out.

    export_tagger(model, "export/1", vocab_file, do_lower_case=True,
                  max_seq_length=128, doc_stride=64, label_list=labels,
                  word_split="treebank")

Signatures:
  * `serving_default`: `text` [batch] in. The text is split into words as
    the run's training words were (serving/words: `treebank`, Penn
    Treebank's words as CoNLL-2003's, `U.S.` and `3,000` whole and a
    sentence's final period apart; or `basic`, the original's
    BasicTokenizer's, every punctuation mark a word), each word into
    WordPieces; a text longer than a sequence is cut into windows as
    run_ner.py cuts sentences, and each word is tagged from its first piece
    in the window that gives it the most context. Out, per text, up to
    the longest text's count of entities (padded): `entity_type` (PER, ...;
    "" for padding), `entity_start` and `entity_end` (code-point offsets in
    the text, end excluded; -1 for padding), `entity_text` and
    `entity_score` (the mean over the entity's words of the tag's
    probability), with `num_entities`; and per word, `words`, `word_start`,
    `word_end` and `tags` (the IOB2 tag; "" past the text's last word).
  * `serve_features`: `input_ids`, `input_mask`, `segment_ids` in,
    `token_logits` out.
  * `tokenize`: `text` in, the windows' three feature tensors out.
Entities are read from the tags as the CoNLL scorer reads them: a B- tag,
or an I- tag after O or after another type, starts one; the words of
punctuation alone at an entity's ends are not part of it, and an entity of
nothing else is none (tasks/ner/raw_text.py reads them the same way).
"""

import tensorflow as tf

from plumbing import tf_example
from serving import export
from serving import window_ops
from serving import words as words_lib
from serving.words import chars


def _lengths(ragged):
  return tf.cast(ragged.row_lengths(), tf.int32)


def windows(tokenizer, texts, max_seq_length, doc_stride, word_split):
  """The windows of every text's WordPieces, as tasks/ner/features.py makes
  them: {input_ids, input_mask, segment_ids [windows, max_seq_length],
  example [windows] (its text), word [windows, max_seq_length] (the word a
  position labels, -1 if none)} and the words (serving/words' words_of in
  `word_split`)."""
  words, word_start, word_end = words_lib.words_of(texts, word_split)
  pieces = tokenizer.tokenize_to_ids(words.flat_values)  # [all words, (pieces)]
  empty = tf.equal(_lengths(pieces), 0)  # A word of no piece is [UNK].
  unk = tf.ragged.boolean_mask(tf.fill([tf.shape(empty)[0], 1], tokenizer.unk_id),
                               empty[:, None])
  pieces = tf.concat([pieces, unk], axis=1)
  doc = words.with_flat_values(pieces).merge_dims(1, 2)  # [batch, (pieces)]
  piece_word = tf.repeat(tf.ragged.range(_lengths(words)).flat_values, _lengths(pieces))
  first_piece = tf.equal(tf.ragged.range(_lengths(pieces)).flat_values, 0)

  spans = window_ops.spans(doc, max_seq_length - 2, doc_stride)
  example = spans.sequence
  take = lambda flat: window_ops.gather_ranges(doc.with_flat_values(flat), *spans)
  window_ids, window_word, window_first = (take(doc.flat_values), take(piece_word),
                                           take(first_piece))
  # A word is labelled at its first piece, in that piece's max-context window.
  is_max = window_ops.max_context(doc, spans)
  labels_here = is_max.with_flat_values(is_max.flat_values & window_first.flat_values)
  word = tf.where(labels_here, window_word, -tf.ones_like(window_word))

  num_windows = tf.shape(example)[0]
  column = lambda value: window_ops.column(value, num_windows)
  tokens = tf.concat([column(tokenizer.cls_id), window_ids, column(tokenizer.sep_id)], axis=1)
  word = tf.concat([column(-1), word, column(-1)], axis=1)
  shape = [num_windows, max_seq_length]
  return {"input_ids": tokens.to_tensor(0, shape=shape),
          "input_mask": tf.ones_like(tokens).to_tensor(0, shape=shape),
          "segment_ids": tf.zeros_like(tokens).to_tensor(0, shape=shape),
          "example": example, "word": word.to_tensor(-1, shape=shape)}, (
              words, word_start, word_end)


class TaggerServer(export.Server):
  """What the SavedModel holds: the model, the tokenizer and the labels."""

  def __init__(self, model, tokenizer, max_seq_length, doc_stride, label_list, word_split,
               limits=None):
    super().__init__(model, tokenizer, name="tagger_server", limits=limits)
    self.max_seq_length = max_seq_length
    self.doc_stride = doc_stride
    self.word_split = word_split
    self.labels = tf.constant([str(l) for l in label_list])
    object.__setattr__(self, "label_list", tuple(str(l) for l in label_list))  # Not tracked.

  def features(self, text):
    (text,) = self.within_limits(text=text)
    features, _ = windows(self.tokenizer, text, self.max_seq_length, self.doc_stride,
                          self.word_split)
    return {name: features[name] for name in export.FEATURE_NAMES}

  def logits(self, features):
    return {"token_logits": tf.cast(export.run_model(
        self.model, features, token_outputs=("token_logits",))["token_logits"], tf.float32)}

  def serve_text(self, text):
    (text,) = self.within_limits(text=text)
    features, (words, word_start, word_end) = windows(
        self.tokenizer, text, self.max_seq_length, self.doc_stride, self.word_split)
    # The model runs at the longest window's length, not max_seq_length.
    width = tf_example.trimmed_length(features["input_mask"], 1)
    probabilities = self.model.token_classifier.probabilities(self.logits(
        {name: features[name][:, :width] for name in export.FEATURE_NAMES})["token_logits"])
    # Each word's label and probability, from the one position that labels it.
    word_at = features["word"][:, :width]
    labelled = word_at >= 0
    word_row = tf.boolean_mask(tf.broadcast_to(features["example"][:, None],
                                               tf.shape(word_at)), labelled)
    word_global = tf.boolean_mask(word_at, labelled) + tf.gather(
        tf.cast(words.row_splits, tf.int32), word_row)
    chosen = tf.boolean_mask(probabilities, labelled)
    label = tf.math.unsorted_segment_max(tf.cast(tf.argmax(chosen, -1), tf.int32),
                                         word_global, tf.shape(words.flat_values)[0])
    score = tf.math.unsorted_segment_max(tf.reduce_max(chosen, -1), word_global,
                                         tf.shape(words.flat_values)[0])
    tags = words.with_flat_values(tf.gather(self.labels, label))
    entities = read_entities(self.label_list, words, words.with_flat_values(label),
                             words.with_flat_values(score), word_start, word_end, text)
    return dict(entities, words=words.to_tensor(""), word_start=word_start.to_tensor(-1),
                word_end=word_end.to_tensor(-1), tags=tags.to_tensor(""))


def read_entities(label_list, words, label, score, word_start, word_end, text):
  """Entities from the words' labels, as the CoNLL scorer reads them, less
  the words of punctuation alone at their ends: `words`, `label` (indices
  into label_list, IOB2 tags), `score`, `word_start`, `word_end` [batch,
  (words)] of the texts [batch]. Returns serving_default's entity outputs."""
  prefixes = [l.split("-", 1)[0] if "-" in l else "O" for l in label_list]
  flat = label.flat_values
  kind = tf.gather([l.split("-", 1)[1] if "-" in l else "" for l in label_list], flat)
  outside = tf.gather([p == "O" for p in prefixes], flat)
  begins = tf.gather([p == "B" for p in prefixes], flat)
  previous_kind = tf.concat([[""], kind[:-1]], 0)
  previous_outside = tf.concat([[True], outside[:-1]], 0)
  first_word = tf.equal(tf.ragged.range(_lengths(label)).flat_values, 0)
  starts = ~outside & (begins | previous_outside | first_word | tf.not_equal(previous_kind, kind))
  member, starts = _trimmed(~outside, starts, chars.punctuation_only(words.flat_values))
  # Entity ids: a running count of starts; words outside belong to none.
  entity = tf.cumsum(tf.cast(starts, tf.int32)) - 1
  count = tf.reduce_sum(tf.cast(starts, tf.int32))
  entity_of_member = tf.boolean_mask(entity, member)
  first = tf.math.unsorted_segment_min(tf.boolean_mask(word_start.flat_values, member),
                                       entity_of_member, count)
  last = tf.math.unsorted_segment_max(tf.boolean_mask(word_end.flat_values, member),
                                      entity_of_member, count)
  mean_score = tf.math.unsorted_segment_mean(tf.boolean_mask(score.flat_values, member),
                                             entity_of_member, count)
  row = tf.boolean_mask(tf.cast(label.value_rowids(), tf.int32), starts)
  batch = tf.shape(text, out_type=tf.int64)[0]

  def per_text(values):
    return tf.RaggedTensor.from_value_rowids(values, tf.cast(row, tf.int64), nrows=batch)

  decoded = chars.decode(text)
  offsets = tf.gather(tf.cast(decoded.row_splits, tf.int32), row)
  spans = tf.gather(decoded.flat_values, tf.ragged.range(first + offsets, last + offsets))
  return {"entity_type": per_text(tf.boolean_mask(kind, starts)).to_tensor(""),
          "entity_start": per_text(first).to_tensor(-1),
          "entity_end": per_text(last).to_tensor(-1),
          "entity_text": per_text(tf.strings.unicode_encode(spans, "UTF-8")).to_tensor(""),
          "entity_score": per_text(mean_score).to_tensor(0.0),
          "num_entities": _lengths(per_text(first))}


def _trimmed(member, starts, punctuation):
  """(member, starts) of the entities' words [all words] without the words
  of punctuation alone at an entity's ends; an entity of nothing else goes."""
  index = tf.range(tf.shape(member)[0])
  count = tf.reduce_sum(tf.cast(starts, tf.int32))
  # Each word's entity, and count (one past the last) for words outside.
  entity = tf.where(member, tf.cumsum(tf.cast(starts, tf.int32)) - 1, count)
  core = member & ~punctuation
  first = tf.math.unsorted_segment_min(tf.boolean_mask(index, core),
                                       tf.boolean_mask(entity, core), count + 1)
  last = tf.math.unsorted_segment_max(tf.boolean_mask(index, core),
                                      tf.boolean_mask(entity, core), count + 1)
  first, last = tf.gather(first, entity), tf.gather(last, entity)
  kept = member & (index >= first) & (index <= last)
  return kept, kept & tf.equal(index, first)


def tagger_signatures(server):
  @tf.function(input_signature=[export.text_spec("text")])
  def tokenize(text):
    return server.features(text)

  @tf.function(input_signature=[export.text_spec("text")])
  def serve_text(text):
    return server.serve_text(text)

  return export.concrete_functions({
      "serving_default": serve_text,
      "serve_features": export.features_function(server.logits),
      "tokenize": tokenize,
  })


def export_tagger(model, export_dir, vocab_file, do_lower_case, max_seq_length, doc_stride,
                  label_list, word_split, precision="float32", limits=None):
  """Writes the tagger's SavedModel (see the module docstring; `word_split`:
  serving/words' SPLITS; `precision`: export.in_precision; `limits`:
  export.RequestLimits); returns export_dir."""
  model = export.in_precision(model, precision)
  server = TaggerServer(model, export.graph_tokenizer(vocab_file, do_lower_case),
                        max_seq_length, doc_stride, label_list, word_split, limits)
  return export.save(server, export_dir, tagger_signatures(server))
