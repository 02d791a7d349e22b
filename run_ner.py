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
tensorflow-datasets' conll2003 instead. The original release has no such
script; this one has run_classifier.py's flags and behaviour (strategies,
checkpoints, resuming when run again) and writes train/eval/predict.tf_record,
labels.txt, eval_results.txt (entity-level precision, recall and F1, overall
and per type, as the CoNLL scorer counts them), and for the test file
predictions.txt (word, gold and predicted tag, in the file's scheme) and
test_results.txt. `--export_dir` writes a SavedModel that finds the
entities of raw text (serving/tagger.py).
"""

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
from plumbing import cli
import run_flags
from tasks import driver
from tasks.ner import task as ner_task

FLAGS = flags.FLAGS

run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("data_dir", None,
                    "The directory of the CoNLL files (train.txt, dev.txt, test.txt), or "
                    "`tfds` for tensorflow-datasets' conll2003.")
flags.DEFINE_integer("max_seq_length", 128,
                     "The maximum total input sequence length after WordPiece tokenization. "
                     "A longer sentence is split into overlapping windows.")
flags.DEFINE_integer("doc_stride", 64,
                     "When a sentence is longer than a sequence, start a new window every "
                     "this many WordPieces (at most a window's length); each word is "
                     "predicted from the window that gives it the most context.")
run_flags.define_eval_and_predict_flags()  # Dev: dev.txt; test: test.txt.
flags.DEFINE_string("tfds_manual_dir", None,
                    "With --data_dir=tfds on a machine without network: a directory "
                    "holding the dataset's source files, already downloaded.")


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS)
  task = ner_task.NerTask(FLAGS.data_dir, FLAGS.output_dir, tokenizer, FLAGS.max_seq_length,
                          FLAGS.doc_stride, run_flags.export_settings(FLAGS),
                          tfds_manual_dir=FLAGS.tfds_manual_dir)
  driver.run(task, run_flags.driver_settings(FLAGS), strategy, config)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("data_dir", "vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
