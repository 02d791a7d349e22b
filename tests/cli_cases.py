"""Runs many command lines of one of the project's entry points in one process.

  python tests/cli_cases.py <script.py or package.module> <cases.json>

cases.json holds a list of argument lists. Each runs through the entry
point's own `main` and plumbing.cli.run, as `python <script> <args>` would,
with the flags reset in between; the output is a JSON list of
{"returncode", "stderr"}, one per case (its log lines included). Starting TensorFlow once instead of
once a case is what makes the error-path tests cheap.
"""

import contextlib
import importlib
import io
import json
import os
import sys
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cases(entry_point, cases):
  sys.path.insert(0, REPO_ROOT)
  from absl import flags  # pylint: disable=g-import-not-at-top
  from absl import logging  # pylint: disable=g-import-not-at-top
  from plumbing import cli  # pylint: disable=g-import-not-at-top
  name = entry_point[:-3] if entry_point.endswith(".py") else entry_point
  module = importlib.import_module(name)
  program = os.path.basename(module.__file__)
  results = []
  for args in cases:
    flags.FLAGS.unparse_flags()
    stderr = io.StringIO()
    # absl's handler holds the stream it was made with: point it at the case's.
    logging.get_absl_handler().python_handler.stream = stderr
    with contextlib.redirect_stderr(stderr):
      try:
        cli.run(module.main, argv=[program] + list(args))
        code = 0
      except SystemExit as exit_:
        code = (0 if exit_.code is None else
                exit_.code if isinstance(exit_.code, int) else 1)  # As Python exits.
      except BaseException:  # pylint: disable=broad-except
        code = "uncaught"
        stderr.write(traceback.format_exc())
    results.append({"returncode": code, "stderr": stderr.getvalue()})
  return results


def main():
  entry_point, cases_file = sys.argv[1:3]
  with open(cases_file, encoding="utf-8") as f:
    cases = json.load(f)
  results = run_cases(entry_point, cases)
  sys.stdout.write("CASES " + json.dumps(results) + "\n")


if __name__ == "__main__":
  main()
