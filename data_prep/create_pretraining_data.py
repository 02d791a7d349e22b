"""What the create_pretraining_data.py command does, with plain arguments:
its inputs checked before any work starts, then the records written
(data_prep/pretraining/generator.py makes them, identical to the
original's)."""

import os

from absl import logging

from data_prep.pretraining import generator
from data_prep import tokenization
from plumbing import stop_request
from plumbing import text_io


def checked_inputs(vocab_file, do_lower_case, input_file):
  """(tokenizer, input files) for `input_file`, comma-separated globs; a
  vocabulary without the special tokens, or no file, is one error line."""
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
  generator.check_vocab(tokenizer, vocab_file)
  input_files = text_io.expand_globs(input_file)
  generator.check_input_files(input_files)
  return tokenizer, input_files


def write_records(tokenizer, input_files, options, output_files=None, output_dir=None,
                  num_tasks=1, task_index=0, num_workers=0, on_invalid_utf8="strict"):
  """Writes the records of `input_files` into `output_files`, or, given
  `output_dir` (sharded mode), one file per input file of this task's share
  there. `num_workers`: tokenization threads, 0 for one per core. SIGTERM
  stops it with nothing half-written."""
  logging.info("*** Reading from input files ***")
  for path in input_files:
    logging.info("  %s", path)
  num_workers = num_workers if num_workers > 0 else (os.cpu_count() or 1)
  with stop_request.safe_points():
    if output_dir:
      generator.generate_shards(input_files, output_dir, tokenizer, options,
                                num_tasks=num_tasks, task_index=task_index,
                                num_workers=num_workers, on_invalid_utf8=on_invalid_utf8)
    else:
      generator.generate(input_files, output_files, tokenizer, options,
                         num_workers=num_workers, on_invalid_utf8=on_invalid_utf8)
