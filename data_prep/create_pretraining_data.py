"""Raw text -> masked-LM / next-sentence TFRecords, identical to the original's.

  python -m data_prep.create_pretraining_data \\
    --input_file=corpus.txt --output_file=out.tfrecord \\
    --vocab_file=vocab.txt --do_lower_case=True

Every flag of the original keeps its name and default. Additions:
  --num_workers           processes for tokenization (0 = one per core);
  --on_invalid_utf8       `strict` (error naming file and line) or `ignore`;
  --output_dir, --num_tasks, --task_index
                          sharded mode (see README): each input file is an
                          independent shard with its own derived seed, written
                          to output_dir/<input name>.tfrecord; existing shards
                          are skipped, so an interrupted run resumes.
"""

import hashlib
import logging as py_logging
import os
import sys
import time

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app
from absl import flags
from absl import logging
import numpy as np

from data_prep import cli
from data_prep import pretraining_corpus
from data_prep import pretraining_instances
from data_prep import pretraining_records
from data_prep import python_random
from data_prep import text_io
from data_prep import tfrecord_io
from data_prep import tokenization
from data_prep.errors import UserError

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files).")
flags.DEFINE_string("output_file", None,
                    "Output TF example file (or comma-separated list of files).")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for "
                  "uncased models and False for cased models.")
flags.DEFINE_bool("do_whole_word_mask", False,
                  "Whether to use whole word masking rather than per-WordPiece "
                  "masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10,
                     "Number of times to duplicate the input data (with "
                     "different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of creating sequences which are shorter than "
                   "the maximum length.")
# Additions.
flags.DEFINE_integer("num_workers", 0,
                     "Tokenization processes; 0 means one per CPU core.")
flags.DEFINE_enum("on_invalid_utf8", "strict", ["strict", "ignore"],
                  "What to do with input lines that are not valid UTF-8: stop "
                  "with an error naming the file and line, or drop the bad "
                  "bytes.")
flags.DEFINE_string("output_dir", None,
                    "Sharded mode: write one output per input file into this "
                    "directory instead of --output_file.")
flags.DEFINE_integer("num_tasks", 1,
                     "Sharded mode: how many processes/machines share the "
                     "input files.")
flags.DEFINE_integer("task_index", 0,
                     "Sharded mode: which of --num_tasks this process is; it "
                     "handles input files i with i % num_tasks == task_index.")

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
    if text_io.file_size(path) == 0:
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
  corpus = pretraining_corpus.read_corpus(
      input_files, tokenizer, num_workers=num_workers,
      on_invalid_utf8=on_invalid_utf8)
  if corpus.num_documents == 0:
    raise UserError("No text found in %s." % ", ".join(input_files))
  logging.info("%d documents, %d sentences, %d tokens (%.1fs).",
               corpus.num_documents, corpus.num_sentences, len(corpus.tokens),
               time.time() - start)

  state = python_random.state_from_seed(
      options.random_seed if seed is None else seed)
  corpus.doc_order = pretraining_instances.shuffle_documents(
      state, corpus.num_documents)
  vocabulary = pretraining_instances.Vocabulary(tokenizer.vocab)
  started = time.time()

  def progress(dupe, docs_done, count):
    rate = count / max(time.time() - started, 1e-9)
    logging.info("Pass %d/%d: %d/%d documents, %d instances (%.0f/s).",
                 dupe + 1, options.dupe_factor, docs_done,
                 corpus.num_documents, count, rate)

  instances = pretraining_instances.create_instances(
      state, corpus, vocabulary, options.max_seq_length,
      options.max_predictions_per_seq, options.dupe_factor,
      options.short_seq_prob, options.masked_lm_prob,
      options.do_whole_word_mask, progress=progress)
  order = pretraining_instances.shuffle_instances(state, instances.count)
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
  written = pretraining_records.write_instances(instances, order, output_files)
  logging.info("Wrote %d total instances in %.1fs.", written, time.time() - start)
  return written


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
  corpus = pretraining_corpus.read_corpus(input_files, tokenizer, num_workers=1)
  corpus.doc_order = pretraining_instances.shuffle_documents(state, corpus.num_documents)
  instances = pretraining_instances.create_instances(
      state, corpus, pretraining_instances.Vocabulary(tokenizer.vocab), max_seq_length,
      max_predictions_per_seq, dupe_factor, short_seq_prob, masked_lm_prob,
      do_whole_word_mask)
  order = pretraining_instances.shuffle_instances(state, instances.count)
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
  when complete. (The CLI uses the compiled encoder instead.)"""
  import tensorflow as tf
  ints = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
  with tfrecord_io.atomic_writers(output_files) as writers:
    for k, instance in enumerate(instances):
      ids = tokenizer.convert_tokens_to_ids(instance.tokens)
      if len(ids) > max_seq_length:
        raise UserError("Instance %d has %d tokens, more than max_seq_length=%d." %
                         (k, len(ids), max_seq_length))
      pad = max_seq_length - len(ids)
      positions = list(instance.masked_lm_positions)
      labels = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
      extra = max_predictions_per_seq - len(positions)
      features = {
          "input_ids": ints(ids + [0] * pad),
          "input_mask": ints([1] * len(ids) + [0] * pad),
          "segment_ids": ints(list(instance.segment_ids) + [0] * pad),
          "masked_lm_positions": ints(positions + [0] * extra),
          "masked_lm_ids": ints(labels + [0] * extra),
          "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
              value=[1.0] * len(labels) + [0.0] * extra)),
          "next_sentence_labels": ints([1 if instance.is_random_next else 0]),
      }
      record = tf.train.Example(features=tf.train.Features(feature=features))
      data = np.frombuffer(record.SerializeToString(), np.uint8)
      writers[k % len(writers)].write_batch(data, np.array([0, len(data)], np.int64))
  return len(instances)


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


def _num_workers(flag_value):
  return flag_value if flag_value > 0 else (os.cpu_count() or 1)


def shard_names(input_files):
  """Each input file's shard name (its base name), which must be distinct:
  it names the output and derives the shard's seed."""
  names = [os.path.basename(p) for p in input_files]
  if len(set(names)) != len(names):
    raise UserError("Sharded mode needs distinct input file names; got "
                     "duplicates among %s." % ", ".join(input_files))
  return names


def options_from_flags():
  """The flags' generation settings, checked."""
  options = Options(
      max_seq_length=FLAGS.max_seq_length,
      max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      random_seed=FLAGS.random_seed, dupe_factor=FLAGS.dupe_factor,
      masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
      do_whole_word_mask=FLAGS.do_whole_word_mask)
  options.validate()
  return options


def tokenizer_and_inputs_from_flags():
  """The flags' tokenizer and input files, checked before any work starts."""
  tokenizer = tokenization.FullTokenizer(
      vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
  check_vocab(tokenizer, FLAGS.vocab_file)
  input_files = text_io.expand_globs(FLAGS.input_file)
  check_input_files(input_files)
  return tokenizer, input_files


def _run_sharded(input_files, tokenizer, options):
  """Sharded mode: every input file on its own, skipping finished shards."""
  names = shard_names(input_files)
  if not 0 <= FLAGS.task_index < FLAGS.num_tasks:
    raise UserError("--task_index must be in [0, --num_tasks).")
  text_io.makedirs(FLAGS.output_dir)
  mine = sorted(zip(names, input_files))[FLAGS.task_index::FLAGS.num_tasks]
  for done, (name, path) in enumerate(mine):
    output = os.path.join(FLAGS.output_dir, name + ".tfrecord")
    if text_io.exists(output):
      logging.info("Shard %s exists; skipping.", output)
      continue
    logging.info("Shard %d/%d: %s -> %s", done + 1, len(mine), path, output)
    generate([path], [output], tokenizer, options,
             num_workers=_num_workers(FLAGS.num_workers),
             on_invalid_utf8=FLAGS.on_invalid_utf8,
             seed=derived_seed(options.random_seed, name))


def main(_):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  options = options_from_flags()
  if bool(FLAGS.output_file) == bool(FLAGS.output_dir):
    raise app.UsageError("Pass exactly one of --output_file and --output_dir.")
  tokenizer, input_files = tokenizer_and_inputs_from_flags()
  logging.info("*** Reading from input files ***")
  for path in input_files:
    logging.info("  %s", path)

  if FLAGS.output_dir:
    _run_sharded(input_files, tokenizer, options)
  else:
    generate(input_files, FLAGS.output_file.split(","), tokenizer, options,
             num_workers=_num_workers(FLAGS.num_workers),
             on_invalid_utf8=FLAGS.on_invalid_utf8)


if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("vocab_file")
  cli.run(main)
