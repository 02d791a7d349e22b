"""The pre-training data generator: text files to shuffled masked-LM + next-
sentence instances (`create_instances`) and TFRecords (`generate`), the same
as the original's, in one run or in shards (`generate_shards`).

The original's library functions keep their names and behaviour:
`create_training_instances` (instances from text, drawing from a
`random.Random`) and `write_instance_to_example_files`.
"""

import hashlib
import os
import time

from absl import logging
import numpy as np

from data_prep.pretraining import corpus as corpus_lib
from data_prep.pretraining import instances as instances_lib
from data_prep.pretraining import python_random
from data_prep.pretraining import records
from plumbing.errors import Stopped
from plumbing.errors import UserError
from plumbing import files
from plumbing import stop_request
from plumbing import tfrecord

_REQUIRED_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "[UNK]")
_EXAMPLES_TO_LOG = 20


class Options(object):
  """The generation settings (the original's flags)."""

  def __init__(self, max_seq_length=128, max_predictions_per_seq=20,
               random_seed=12345, dupe_factor=10, masked_lm_prob=0.15,
               short_seq_prob=0.1, do_whole_word_mask=False):
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq
    self.random_seed = random_seed
    self.dupe_factor = dupe_factor
    self.masked_lm_prob = masked_lm_prob
    self.short_seq_prob = short_seq_prob
    self.do_whole_word_mask = do_whole_word_mask

  def validate(self):
    if self.max_seq_length < 5:
      raise UserError(
          "--max_seq_length=%d cannot work: an instance needs [CLS] A [SEP] B "
          "[SEP] with at least one token in A and in B (minimum 5)." %
          self.max_seq_length)
    if self.max_predictions_per_seq < 1:
      raise UserError("--max_predictions_per_seq must be at least 1, got %d." %
                       self.max_predictions_per_seq)
    if not 0.0 < self.masked_lm_prob <= 1.0:
      raise UserError("--masked_lm_prob must be in (0, 1], got %r." %
                       self.masked_lm_prob)
    if not 0.0 <= self.short_seq_prob <= 1.0:
      raise UserError("--short_seq_prob must be in [0, 1], got %r." %
                       self.short_seq_prob)
    if self.dupe_factor < 1:
      raise UserError("--dupe_factor must be at least 1, got %d." %
                       self.dupe_factor)


def check_vocab(tokenizer, vocab_file):
  missing = [t for t in _REQUIRED_TOKENS if t not in tokenizer.vocab]
  if missing:
    raise UserError("Vocabulary %s lacks the special token(s) %s." %
                     (vocab_file, ", ".join(missing)))


def check_input_files(input_files):
  if not input_files:
    raise UserError("--input_file matched no files.")
  for path in input_files:
    if files.file_size(path) == 0:
      raise UserError("Input file %s is empty." % path)


def derived_seed(random_seed, shard_name):
  """A shard's seed: stable across machines, distinct per shard name."""
  digest = hashlib.sha256(("%d:%s" % (random_seed, shard_name)).encode("utf-8"))
  return int.from_bytes(digest.digest()[:8], "little")


def create_instances(input_files, tokenizer, options, num_workers=1,
                     on_invalid_utf8="strict", seed=None):
  """Text to shuffled instances: (instances, their record order, corpus)."""
  options.validate()
  start = time.time()
  corpus = corpus_lib.read_corpus(
      input_files, tokenizer, num_workers=num_workers,
      on_invalid_utf8=on_invalid_utf8)
  if corpus.num_documents == 0:
    raise UserError("No text found in %s." % ", ".join(input_files))
  logging.info("%d documents, %d sentences, %d tokens (%.1fs).",
               corpus.num_documents, corpus.num_sentences, len(corpus.tokens),
               time.time() - start)

  state = python_random.state_from_seed(
      options.random_seed if seed is None else seed)
  corpus.doc_order = instances_lib.shuffle_documents(
      state, corpus.num_documents)
  vocabulary = instances_lib.Vocabulary(tokenizer.vocab)
  started = time.time()

  def progress(dupe, docs_done, count):
    stop_request.check("while making instances (pass %d of %d)" % (dupe + 1, options.dupe_factor))
    rate = count / max(time.time() - started, 1e-9)
    logging.info("Pass %d/%d: %d/%d documents, %d instances (%.0f/s).",
                 dupe + 1, options.dupe_factor, docs_done,
                 corpus.num_documents, count, rate)

  instances = instances_lib.create_instances(
      state, corpus, vocabulary, options.max_seq_length,
      options.max_predictions_per_seq, options.dupe_factor,
      options.short_seq_prob, options.masked_lm_prob,
      options.do_whole_word_mask, progress=progress)
  order = instances_lib.shuffle_instances(state, instances.count)
  return instances, order, corpus


def generate(input_files, output_files, tokenizer, options, num_workers=1,
             on_invalid_utf8="strict", seed=None):
  """The whole pipeline for one set of inputs; returns the instance count."""
  start = time.time()
  instances, order, _ = create_instances(input_files, tokenizer, options, num_workers,
                                         on_invalid_utf8, seed)
  _log_examples(instances, order, tokenizer)

  logging.info("*** Writing to output files ***")
  for path in output_files:
    logging.info("  %s", path)
  written = records.write_instances(instances, order, output_files)
  logging.info("Wrote %d total instances in %.1fs.", written, time.time() - start)
  return written


def _log_examples(instances, order, tokenizer):
  """Logs the first instances as the original did."""
  for i in order[:_EXAMPLES_TO_LOG]:
    f = instances.features(i)
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokenizer.convert_ids_to_tokens(
        f["input_ids"][:f["length"]].tolist())))
    for name in ("segment_ids", "masked_lm_positions"):
      logging.info("%s: %s", name, " ".join(map(str, f[name].tolist())))
    logging.info("masked_lm_labels: %s", " ".join(tokenizer.convert_ids_to_tokens(
        f["masked_lm_ids"].tolist())))
    logging.info("next_sentence_labels: %d", f["next_sentence_labels"])


def shard_names(input_files):
  """Each input file's shard name (its base name), which must be distinct:
  it names the output and derives the shard's seed."""
  names = [os.path.basename(p) for p in input_files]
  if len(set(names)) != len(names):
    raise UserError("Sharded mode needs distinct input file names; got "
                     "duplicates among %s." % ", ".join(input_files))
  return names


def generate_shards(input_files, output_dir, tokenizer, options, num_tasks=1, task_index=0,
                    num_workers=1, on_invalid_utf8="strict"):
  """Each input file on its own (its own derived seed) to
  output_dir/<input name>.tfrecord; this task's share of the files
  (i % num_tasks == task_index), skipping shards already written."""
  names = shard_names(input_files)
  if not 0 <= task_index < num_tasks:
    raise UserError("--task_index must be in [0, --num_tasks).")
  files.makedirs(output_dir)
  mine = sorted(zip(names, input_files))[task_index::num_tasks]
  for done, (name, path) in enumerate(mine):
    output = os.path.join(output_dir, name + ".tfrecord")
    if files.exists(output):
      logging.info("Shard %s exists; skipping.", output)
      continue
    logging.info("Shard %d/%d: %s -> %s", done + 1, len(mine), path, output)
    try:
      generate([path], [output], tokenizer, options, num_workers=num_workers,
               on_invalid_utf8=on_invalid_utf8,
               seed=derived_seed(options.random_seed, name))
    except Stopped as stopped:
      raise Stopped("%s (%d of this task's %d shards were complete before %s; the "
                    "re-run skips them)" % (stopped, done, len(mine), output)) from None


class TrainingInstance(object):
  """One instance as the original's API returns it (tokens as strings)."""

  def __init__(self, tokens, segment_ids, masked_lm_positions, masked_lm_labels,
               is_random_next):
    self.tokens = tokens
    self.segment_ids = segment_ids
    self.is_random_next = is_random_next
    self.masked_lm_positions = masked_lm_positions
    self.masked_lm_labels = masked_lm_labels

  def __str__(self):
    return ("tokens: %s\nsegment_ids: %s\nis_random_next: %s\n"
            "masked_lm_positions: %s\nmasked_lm_labels: %s\n\n" % (
                " ".join(self.tokens), " ".join(map(str, self.segment_ids)),
                self.is_random_next, " ".join(map(str, self.masked_lm_positions)),
                " ".join(self.masked_lm_labels)))

  __repr__ = __str__


def create_training_instances(input_files, tokenizer, max_seq_length,
                              dupe_factor, short_seq_prob, masked_lm_prob,
                              max_predictions_per_seq, rng,
                              do_whole_word_mask=False):
  """The original's library function: instances (in their final shuffled
  order) from text files, drawing from and advancing `rng` (a random.Random)
  exactly as the original did. Computed by the compiled generator."""
  version, words, gauss_next = rng.getstate()
  state = np.array(words, dtype=np.uint32)
  corpus = corpus_lib.read_corpus(input_files, tokenizer, num_workers=1)
  corpus.doc_order = instances_lib.shuffle_documents(state, corpus.num_documents)
  instances = instances_lib.create_instances(
      state, corpus, instances_lib.Vocabulary(tokenizer.vocab), max_seq_length,
      max_predictions_per_seq, dupe_factor, short_seq_prob, masked_lm_prob,
      do_whole_word_mask)
  order = instances_lib.shuffle_instances(state, instances.count)
  rng.setstate((version, tuple(int(w) for w in state), gauss_next))
  result = []
  for i in order:
    f = instances.features(i)
    n = f["length"]
    result.append(TrainingInstance(
        tokens=tokenizer.convert_ids_to_tokens(f["input_ids"][:n].tolist()),
        segment_ids=f["segment_ids"][:n].tolist(),
        masked_lm_positions=f["masked_lm_positions"].tolist(),
        masked_lm_labels=tokenizer.convert_ids_to_tokens(f["masked_lm_ids"].tolist()),
        is_random_next=bool(f["next_sentence_labels"])))
  return result


def write_instance_to_example_files(instances, tokenizer, max_seq_length,
                                    max_predictions_per_seq, output_files):
  """The original's writer for `TrainingInstance` lists: padded features,
  records round-robin over `output_files`, each file renamed into place only
  when complete. (The CLI writes from the compiled instances instead.)"""
  spec = records.example_spec(max_seq_length, max_predictions_per_seq)
  rows = [[] for _ in output_files]
  for k, instance in enumerate(instances):
    ids = tokenizer.convert_tokens_to_ids(instance.tokens)
    if len(ids) > max_seq_length:
      raise UserError("Instance %d has %d tokens, more than max_seq_length=%d." %
                      (k, len(ids), max_seq_length))
    pad = max_seq_length - len(ids)
    positions = list(instance.masked_lm_positions)
    labels = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
    extra = max_predictions_per_seq - len(positions)
    rows[k % len(output_files)].append({
        "input_ids": ids + [0] * pad,
        "input_mask": [1] * len(ids) + [0] * pad,
        "segment_ids": list(instance.segment_ids) + [0] * pad,
        "masked_lm_positions": positions + [0] * extra,
        "masked_lm_ids": labels + [0] * extra,
        "masked_lm_weights": [1.0] * len(labels) + [0.0] * extra,
        "next_sentence_labels": [1 if instance.is_random_next else 0],
    })
  with tfrecord.atomic_writers(output_files) as writers:
    for writer, file_rows in zip(writers, rows):
      if file_rows:
        writer.write_batch(*spec.encode_batch(*spec.columns_of(file_rows)))
  return len(instances)
