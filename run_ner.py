"""Fine-tunes BERT for named-entity recognition (CoNLL-2003 and its format),
as the BERT paper describes it: each word tagged by its first WordPiece.

  python run_ner.py --do_train --do_eval --do_predict --data_dir=conll2003 \\
    --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \\
    --num_train_epochs=3.0 --output_dir=/tmp/ner_output/

--data_dir holds train.txt, dev.txt and test.txt (or the shared task's
eng.train, eng.testa, eng.testb): one token a line with its tag last, a
blank line between sentences (IOB1, IOB2 or BIOES tags); `tfds` reads
tensorflow-datasets' conll2003 instead. Or name your own files with
--train_file, --dev_file and --test_file: CoNLL files, or JSON Lines
(*.jsonl or *.json) of `{"tokens": [...], "tags": [...]}` (or "ner_tags"), as Hugging
Face datasets' conll2003 with its tags as strings. The original release has
no such script; this one has run_classifier.py's flags and behaviour (strategies,
checkpoints, resuming when run again) and writes train/eval/predict.tf_record,
labels.txt, eval_results.txt (entity-level precision, recall and F1, overall
and per type, as the CoNLL scorer counts them), and for the test file
predictions.txt (word, gold and predicted tag, in the file's scheme) and
test_results.txt. `--predict_file` takes raw text, one text a line, and
writes entities.jsonl: per line, the text and its entities (type, start and
end code-point offsets, end excluded, text and score), found by the model
trained in --output_dir (or by --do_train) in the words the export finds:
raw text is cut into words as the training words were (serving/words:
Penn Treebank's conventions, CoNLL-2003's, or the original BasicTokenizer's
split, every punctuation mark a word), decided from the training words and
recorded in raw_text_words.txt, or chosen with --raw_text_words; no entity
begins or ends with a word of punctuation alone. `--export_dir` writes a
SavedModel that finds the entities of raw text the same way
(serving/tagger.py).
"""

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
from plumbing import cli
from plumbing.errors import UserError
from plumbing import files
import run_flags
from tasks import driver
from tasks.ner import raw_text
from tasks.ner import task as ner_task

FLAGS = flags.FLAGS

run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("data_dir", None,
                    "The directory of the CoNLL files (train.txt, dev.txt, test.txt), or "
                    "`tfds` for tensorflow-datasets' conll2003 (or give your own files: "
                    "--train_file, --dev_file, --test_file).")
cli.define_max_seq_length(help_text=(
    "The maximum total input sequence length after WordPiece tokenization. "
    "A longer sentence is split into overlapping windows."))
flags.DEFINE_integer("doc_stride", 64,
                     "When a sentence is longer than a sequence, start a new window every "
                     "this many WordPieces (at most a window's length); each word is "
                     "predicted from the window that gives it the most context.")
run_flags.define_eval_and_predict_flags()  # Dev: dev.txt; test: test.txt.
flags.DEFINE_string("tfds_manual_dir", None,
                    "With --data_dir=tfds on a machine without network: a directory "
                    "holding the dataset's source files, already downloaded.")
# Your own files instead of --data_dir; each read by its name's extension.
flags.DEFINE_string("train_file", None,
                    "Instead of --data_dir: your training file, CoNLL (a token a line, its "
                    "tag last) or, named *.jsonl or *.json, JSON Lines ({\"tokens\": [...], "
                    "\"tags\": [...]} a line).")
flags.DEFINE_string("dev_file", None,
                    "Instead of --data_dir: the file --do_eval scores (CoNLL, or *.jsonl).")
flags.DEFINE_string("test_file", None,
                    "Instead of --data_dir: the file --do_predict tags and scores (CoNLL, "
                    "or *.jsonl).")
flags.DEFINE_enum("raw_text_words", None, ["treebank", "basic"],
                  "How --predict_file and --export_dir cut raw text into words: treebank "
                  "(Penn Treebank's words, as CoNLL-2003's: U.S., 3,000 and "
                  "Chester-le-Street whole, a sentence's final period apart) or basic (the "
                  "original's BasicTokenizer: every punctuation mark a word, as in Chinese "
                  "data of a character a line). By default the run's record "
                  "(raw_text_words.txt in --output_dir), else what the training words follow.")
flags.DEFINE_string("predict_file", None,
                    "Raw text, UTF-8, one text a line: each line's entities go to "
                    "<output_dir>/entities.jsonl, found by the model in --output_dir (or "
                    "trained by --do_train).")


# What decides a run's result (plumbing/run_directory/settings.py), besides the shared ones.
SETTINGS = run_flags.TRAINING_SETTINGS + ("data_dir", "train_file", "doc_stride")


def _split_files():
  """--train_file, --dev_file, --test_file by split, checked before any work:
  not with --data_dir, each there, and one for each split the run reads."""
  paths = {"train": FLAGS.train_file, "dev": FLAGS.dev_file, "test": FLAGS.test_file}
  if not any(paths.values()):
    return paths
  if FLAGS.data_dir:
    raise UserError("Give either --data_dir or your own files (--train_file, --dev_file, "
                    "--test_file), not both.")
  for split, action in (("train", "do_train"), ("dev", "do_eval"), ("test", "do_predict")):
    if paths[split] and not files.exists(paths[split]):
      raise UserError("--%s_file=%s: no such file." % (split, paths[split]))
    if FLAGS[action].value and not paths[split]:
      raise UserError("--%s needs --%s_file (your own files are read instead of --data_dir)."
                      % (action, split))
  return paths


def _check_actions(flag_values):
  """The fine-tuning scripts' check, with --predict_file a run of its own."""
  if not flag_values.predict_file:
    run_flags.check_classifier_actions(flag_values)


def main(_):
  logging.set_verbosity(logging.INFO)
  recorded = run_flags.check_run_settings(FLAGS, SETTINGS)
  split_files = _split_files()
  # Read first: a mistake in the file shows before any training.
  texts = raw_text.read_lines(FLAGS.predict_file) if FLAGS.predict_file else None
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS, check_flags=_check_actions,
                                                             recorded=recorded)
  task = ner_task.NerTask(FLAGS.data_dir, FLAGS.output_dir, tokenizer, FLAGS.max_seq_length,
                          FLAGS.doc_stride, run_flags.export_settings(FLAGS, tokenizer),
                          tfds_manual_dir=FLAGS.tfds_manual_dir, split_files=split_files,
                          raw_text_words=FLAGS.raw_text_words)
  settings = run_flags.driver_settings(FLAGS, recorded=recorded)
  batch_size = run_flags.check_batch_size(FLAGS, "predict_batch_size", strategy)
  model = driver.run(task, settings, strategy, config)
  if texts is not None:
    task.write_entities(strategy, model, texts, FLAGS.predict_file, batch_size,
                        settings.trim_to_multiple)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
