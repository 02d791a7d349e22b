"""Writes one sentence vector per line of text, as sentence-transformers
makes them: the last layer pooled over the text's tokens (mean, [CLS] or
max), L2-normalised or not.

  python embed.py --input_file=sentences.txt --output_file=vectors.npy \\
    --vocab_file=$MODEL_DIR/vocab.txt --bert_config_file=$MODEL_DIR/bert_config.json \\
    --init_checkpoint=$MODEL_DIR/bert_model.ckpt --sentence_transformers_dir=$HF_DIR \\
    [--pooling=mean|cls|max] [--normalize] [--max_seq_length=256] [--export_dir=DIR]

One text per input line. The pooling, normalisation, length and casing not
given as flags come from the model's sentence-transformers files
(--sentence_transformers_dir, or --vocab_file's directory when it holds
them; tasks/sentence_embedding/settings.py), else from our defaults, each
logged with its source. Vectors go to a .npy or JSON Lines file
(tasks/sentence_embedding/outputs.py); --export_dir also writes a SavedModel
that returns the same vector for raw text (serving/embedding.py).
"""

from absl import flags
from absl import logging
from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)

from data_prep import tokenization
import modeling
from modeling import pooling as pooling_lib
from modeling.checkpoints import loading
from plumbing import cli
from plumbing import progress as progress_lib
from plumbing.errors import UserError
import run_flags
from tasks import feature_extraction
from tasks.sentence_embedding import outputs

FLAGS = flags.FLAGS

cli.define_tokenizer_flags()
run_flags.define_weights_flag()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("input_file", None, "One text per line (the whole line: no pairs).")
flags.DEFINE_string("output_file", None,
                    "Where to write the vectors: .npy (float32 [lines, hidden]) or .jsonl "
                    "({\"text\", \"embedding\"} a line); see --output_format.")
flags.DEFINE_enum("output_format", None, list(outputs.FORMATS),
                  "npy or jsonl. Default: --output_file's extension.")
run_flags.define_model_flags("The model's checkpoint.")
run_flags.define_sentence_vector_flags()
flags.DEFINE_integer("batch_size", 32, "Texts per batch.")
run_flags.define_export_flags("Also write a SavedModel for TF Serving here: raw text in, "
                              "the vector out (serving/embedding.py).")


def _check_flags():
  """Texts in and vectors out, an export, or both; not half of one."""
  if bool(FLAGS.input_file) != bool(FLAGS.output_file):
    raise UserError("--input_file and --output_file go together: give both%s." % (
        ", or neither with --export_dir" if FLAGS.export_dir else ""))
  if not FLAGS.input_file and not FLAGS.export_dir:
    raise UserError("Nothing to do: give --input_file and --output_file, --export_dir, "
                    "or both.")


def _embed(strategy, model, tokenizer, settings, num_lines, kind):
  """Every line's vector, written to --output_file in format `kind`."""

  def replica(features):
    tokens = model(features, training=False)["sequence_output"]
    return pooling_lib.sentence_vectors(tokens, features["input_mask"], settings.pooling,
                                        settings.normalize)

  writer = outputs.WRITERS[kind](FLAGS.output_file, num_lines, model.config.hidden_size)
  progress = progress_lib.Progress("lines", num_lines, verb="Embedded")
  try:
    vectors = feature_extraction.vectors_by_line(
        strategy, replica, FLAGS.input_file, num_lines, tokenizer, settings.max_seq_length,
        FLAGS.batch_size, run_flags.trim_to_multiple(FLAGS), pairs=False)
    texts = feature_extraction.read_examples(FLAGS.input_file, pairs=False)
    for example, (_, vector) in zip(texts, vectors):
      writer.write(example.text_a, vector)
      progress.advance(1)
  except BaseException:
    writer.abort()
    raise
  writer.close()
  progress.finish()
  logging.info("Wrote %s (%s, %d lines).", FLAGS.output_file, kind, progress.done)


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy = run_flags.create_strategy(FLAGS)  # First: before TensorFlow runs anything.
  _check_flags()
  settings = run_flags.sentence_vector_settings(FLAGS)
  config = run_flags.load_config(FLAGS, settings.max_seq_length)
  run_flags.check_batch_size(FLAGS, "batch_size", strategy)
  tokenization.validate_case_matches_checkpoint(settings.do_lower_case, FLAGS.init_checkpoint)
  tokenizer = run_flags.load_tokenizer(FLAGS, config, settings.do_lower_case)
  if FLAGS.input_file:  # Every line is checked before the model loads.
    kind = outputs.output_format(FLAGS.output_file, FLAGS.output_format)
    num_lines = feature_extraction.check_input(FLAGS.input_file, pairs=False)
  with strategy.scope(), modeling.deferred_initialization() as deferred:
    model = modeling.BertModel(config)
  loading.load_weights(model, FLAGS.init_checkpoint, deferred, FLAGS.weights)
  if FLAGS.input_file:
    _embed(strategy, model, tokenizer, settings, num_lines, kind)
  if FLAGS.export_dir:
    from serving import embedding  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    embedding.export_embedder(
        model, FLAGS.export_dir, FLAGS.vocab_file, settings.do_lower_case,
        settings.max_seq_length, settings.pooling, settings.normalize,
        precision=FLAGS.export_precision, limits=run_flags.request_limits(FLAGS))
    logging.info("Exported a SavedModel to %s", FLAGS.export_dir)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("vocab_file", "bert_config_file", "init_checkpoint"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
