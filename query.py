"""Asks an export what TF Serving's REST API would answer, without a server.

  bert-query --export_dir=mrpc_export/1 --text_a="The cat sat." --text_b="A cat sat."
  bert-query --export_dir=ner_export/1 --lines=texts.txt     # one text a line; - is stdin
  bert-query --export_dir=squad_export/1 \\
    --request='{"instances": [{"question": "Who sat?", "context": "The cat sat."}]}'
  bert-query --export_dir=swag_export/1 --request=@body.json  # @- is stdin

(`python query.py` from a clone.) Prints the JSON body TF Serving answers
(serving/rest.py): {"predictions": [...]} for texts from flags or lines,
sent as a row-format request; {"error": "..."} for a request the server
refuses, then also one line on stderr, and status 1. The flags that carry
texts are named after the signature's inputs, known only once the export is
loaded: hence argparse, which parses in two passes, not absl's flags.

Loads the SavedModel with TensorFlow and tensorflow-text only (through
serving/rest.py and plumbing/startup.py, which need nothing else), so it
runs wherever a server could.
"""

import argparse
import json
import logging
import os
import sys

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
import tensorflow as tf

from serving import rest

# The text inputs of this project's exports (docs/serving.md), for --help;
# the flags an export takes are read from its signature.
EXPORT_INPUTS = (("classifier", ("--text_a", "--text_b")),
                 ("SQuAD", ("--question", "--context")),
                 ("SWAG", ("--context", "--start", "--endings")),
                 ("NER, fill-mask, sentence vectors", ("--text",)))


class UsageError(ValueError):
  """Flags or files that make no request: one line, no answer."""


class _Parser(argparse.ArgumentParser):
  """Usage errors as one line and status 1, as every command of the project."""

  def error(self, message):
    _fail(self.prog, message)


def _fail(program, message):
  sys.stderr.write("%s: error: %s\n" % (program, " ".join(message.split())))
  sys.exit(1)


def _write(text):
  """UTF-8 whatever the locale: answers hold any language's text."""
  sys.stdout.flush()
  sys.stdout.buffer.write((text + "\n").encode("utf-8"))
  sys.stdout.buffer.flush()


def _read(path, flag):
  """A file's bytes ("-": stdin's)."""
  if path == "-":
    return sys.stdin.buffer.read()
  try:
    with open(path, "rb") as f:
      return f.read()
  except OSError as error:
    raise UsageError("%s: cannot read it (%s)" % (flag, error.strerror)) from None


def _example(specs, values, where):
  """One instance from the strings given for each input: one for an input of
  one text per example, a list for one of several (SWAG's endings)."""
  instance = {}
  for name, texts in values.items():
    if specs[name].shape.rank == 1:
      if len(texts) != 1:
        raise UsageError("%s: %d values of %s, which takes one text per example"
                         % (where, len(texts), name))
      instance[name] = texts[0]
    else:
      instance[name] = texts
  return instance


def _instances_from_flags(specs, given):
  """--NAME=TEXT flags, repeated for several examples; an input that takes a
  list per example (SWAG's endings) gets its values shared out in order."""
  given = rest.with_empty_text_b(specs, given)
  missing = sorted(set(specs) - set(given))
  if missing:
    raise UsageError("--%s: missing; the signature takes %s"
                     % (missing[0], ", ".join("--" + n for n in sorted(specs))))
  counts = {name: len(given[name]) for name in given if specs[name].shape.rank == 1}
  examples = max(counts.values(), default=1)
  fewer = sorted(name for name, count in counts.items() if count != examples)
  if fewer:
    most = min(name for name, count in counts.items() if count == examples)
    raise UsageError("--%s given %s but --%s %d times; give each input once per example"
                     % (fewer[0], "once" if counts[fewer[0]] == 1 else "%d times"
                        % counts[fewer[0]], most, examples))
  instances = []
  for i in range(examples):
    values = {}
    for name, texts in given.items():
      if name in counts:
        values[name] = [texts[i]]
      elif len(texts) % examples:
        raise UsageError("--%s: %d values do not share out over %d examples"
                         % (name, len(texts), examples))
      else:
        share = len(texts) // examples
        values[name] = texts[i * share:(i + 1) * share]
    instances.append(_example(specs, values, "example %d" % (i + 1)))
  return instances


def _instances_from_lines(specs, data, columns, flag):
  """One example a line: the text, or with --columns, tab-separated fields
  (a name given several times collects its fields into a list)."""
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as error:
    raise UsageError("%s: not UTF-8 text (byte %d)" % (flag, error.start)) from None
  lines = text.replace("\r\n", "\n").split("\n")
  if lines[-1] == "":
    lines.pop()
  if not lines:
    raise UsageError("%s: no lines" % flag)
  if columns is None:
    if len(specs) > 1:
      raise UsageError("%s: the signature takes %s; name the tab-separated fields of a "
                       "line with --columns" % (flag, ", ".join(sorted(specs))))
    columns = list(specs)
  unknown = sorted(set(columns) - set(specs))
  missing = sorted(set(specs) - set(columns))
  if unknown or missing:
    raise UsageError("--columns: %s; the signature takes %s" % (
        "%s is not an input" % unknown[0] if unknown else "%s is missing" % missing[0],
        ", ".join(sorted(specs))))
  instances = []
  for number, line in enumerate(lines, 1):
    fields = line.split("\t") if len(columns) > 1 else [line]
    if len(fields) != len(columns):
      raise UsageError("%s, line %d: %d tab-separated fields, not the %d of --columns"
                       % (flag, number, len(fields), len(columns)))
    values = {}
    for name, field in zip(columns, fields):
      values.setdefault(name, []).append(field)
    instances.append(_example(specs, values, "%s, line %d" % (flag, number)))
  return instances


def _text_flags(specs, args):
  """{input name: [texts]} from --NAME=TEXT flags naming the signature's inputs."""
  parser = _Parser(allow_abbrev=False)
  for name in sorted(specs):
    parser.add_argument("--" + name, action="append")
  given, unknown = parser.parse_known_args(args)
  if unknown:
    raise UsageError("%s: not an input of the signature; it takes %s" % (
        unknown[0].split("=")[0], ", ".join("--" + n for n in sorted(specs))))
  return {name: texts for name, texts in vars(given).items() if texts is not None}


def _request(args, text_flags, model):
  """The body the command's flags make: --request's, or a row-format request
  of the texts given as flags or lines."""
  if args.request is not None:
    body = args.request
    return _read(body[1:], "--request=" + body) if body.startswith("@") else body
  if args.signature_name not in model.signatures:
    raise UsageError("--signature_name=%s: %s has no such signature; it has %s" % (
        args.signature_name, args.export_dir, ", ".join(sorted(model.signatures))))
  specs = rest.input_specs(model.signatures[args.signature_name])
  if args.lines is not None:
    columns = None if args.columns is None else args.columns.split(",")
    flag = "--lines=" + args.lines
    instances = _instances_from_lines(specs, _read(args.lines, flag), columns, flag)
  else:
    instances = _instances_from_flags(specs, _text_flags(specs, text_flags))
  return {"signature_name": args.signature_name, "instances": instances}


def _no_saved_model(export_dir):
  """What to pass instead: TF Serving wants the model's base directory, this
  command a version directory inside it."""
  message = "--export_dir=%s holds no saved_model.pb" % export_dir
  if tf.io.gfile.isdir(export_dir):
    versions = sorted((d.rstrip("/") for d in tf.io.gfile.listdir(export_dir)
                       if d.rstrip("/").isdigit()), key=int)
    if versions:
      return message + "; pass a version directory, e.g. %s" % os.path.join(
          export_dir, versions[-1])
  return message + "; pass the directory --export_dir wrote"


def _load_quietly(export_dir):
  """tf.saved_model.load, without its warnings about gradients, which
  answering requests never takes."""
  disabled = logging.root.manager.disable
  logging.disable(logging.WARNING)
  try:
    return tf.saved_model.load(export_dir)
  finally:
    logging.disable(disabled)


def main(argv=None):
  """The command line: `argv` without the program's name (None: sys.argv's)."""
  parser = _Parser(
      description=__doc__.split("\n\n")[0], allow_abbrev=False,
      epilog="Texts on the command line: one flag per input of the signature, named as the "
             "input, repeated for several examples (a list input such as SWAG's endings takes "
             "its values in order). The exports' inputs: %s." % "; ".join(
                 "%s %s" % (kind, " ".join(flags)) for kind, flags in EXPORT_INPUTS))
  parser.add_argument("--export_dir", required=True,
                      help="The SavedModel's directory (the version directory, .../1).")
  parser.add_argument("--signature_name", default=rest.DEFAULT_SIGNATURE,
                      help="The signature to ask; a request's own signature_name wins.")
  parser.add_argument("--request", help="The JSON body a client would POST to "
                      "/v1/models/NAME:predict; @FILE reads it from FILE, @- from stdin.")
  parser.add_argument("--lines", help="A UTF-8 file of one example a line (- for stdin), "
                      "sent as one row-format request.")
  parser.add_argument("--columns", help="With --lines, for a signature of several inputs: "
                      "the input each tab-separated field of a line is, e.g. question,context.")
  args, text_flags = parser.parse_known_args(argv)
  if not tf.io.gfile.exists(os.path.join(args.export_dir, "saved_model.pb")):
    parser.error(_no_saved_model(args.export_dir))
  if args.columns is not None and args.lines is None:
    parser.error("--columns goes with --lines")
  sources = [flag for flag, value in (("--request", args.request), ("--lines", args.lines),
                                      ("text flags", text_flags or None)) if value is not None]
  if len(sources) != 1:
    parser.error("give texts as flags (one per input of the signature, e.g. --text_a=...), "
                 "--lines=FILE or --request=JSON: %s" % (
                     "one of them" if sources else "none was given"))
  try:
    model = _load_quietly(args.export_dir)
  except (OSError, ValueError, tf.errors.OpError) as error:
    parser.error("--export_dir=%s: cannot load it (%s)" % (
        args.export_dir, str(error).strip().splitlines()[0]))
  try:
    body = _request(args, text_flags, model)
  except UsageError as error:
    parser.error(str(error))
  try:
    answer = rest.answer(model, body, default_signature=args.signature_name)
  except rest.RequestError as error:
    _write(json.dumps({"error": str(error)}, ensure_ascii=False))
    source = sources[0]
    if source == "--request" and args.request.startswith("@"):
      source += "=" + args.request
    _fail(parser.prog, "%s: %s" % (source, error))
  _write(json.dumps(answer, ensure_ascii=False))


def cli_main():
  """The installed command `bert-query`."""
  main()


if __name__ == "__main__":
  cli_main()
