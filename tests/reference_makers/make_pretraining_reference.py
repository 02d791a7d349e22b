"""Remakes tests/data/pretraining_reference/*.tfrecord with the original
google-research/bert create_pretraining_data.py.

One run of the original script per entry of REFERENCE_RUNS in
tests/pretraining_references.py (read from that file, so the runs
here are always the ones the test replays), with that entry's flags and
inputs: shared inputs from ../shared/data, own inputs and vocabularies from
tests/data. A run with n outputs writes `<name>_0.tfrecord` ...
`<name>_<n-1>.tfrecord`, a run with one output `<name>.tfrecord`.

    bench/output/envs/original/bin/python \\
        tests/reference_makers/make_pretraining_reference.py \\
        --original_dir=/path/to/bert [--output_dir=DIR] [--check] [--runs=a,b]

The original script runs unchanged in a subprocess (the copy that
original.code_dir makes; its tf.flags, tf.app.run, tf.gfile, tf.logging and
tf.python_io all exist under tf.compat.v1 in TensorFlow 2.21).

Why --check cannot ask for byte equality of whole files: the original builds
each tf.train.Example from a dict of 7 features and serializes it with the
protobuf runtime TensorFlow uses (upb). upb writes map entries in the order
of its hash table, and seeds that hash with the address of a static variable,
which address-space layout randomization changes from process to process.
So every run of the original writes the 7 feature entries of its records in
a new order (one order for all records of a run), and the committed files,
made by earlier runs, have orders of their own. Everything else is
determined. --check therefore compares each file record by record: same
number of records, and for every record the same set of feature entries,
each entry (name, type, every value) byte for byte; only the order of the
entries inside a record may differ. It reports files that are byte-identical
outright as such.
"""

import argparse
import ast
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
TEST_DATA = os.path.join(REPO_ROOT, "tests", "data")
COMMITTED = os.path.join(TEST_DATA, "pretraining_reference")
SHARED_DATA = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))
TEST_FILE = os.path.join(REPO_ROOT, "tests", "pretraining_references.py")
# The module-level names of the test file that REFERENCE_RUNS is written with.
RUN_NAMES = ("UNCASED", "CHINESE", "CORPUS_A", "CORPUS_B", "REFERENCE_RUNS")

sys.path.insert(0, HERE)
import original  # pylint: disable=g-import-not-at-top,wrong-import-position


def reference_runs():
  """REFERENCE_RUNS of the test file, evaluated without importing the test
  (which needs pytest and this project's code)."""
  with open(TEST_FILE, encoding="utf-8") as f:
    tree = ast.parse(f.read(), TEST_FILE)
  wanted = [node for node in tree.body if isinstance(node, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id in RUN_NAMES for t in node.targets)]
  namespace = {"__builtins__": {"dict": dict}}
  exec(compile(ast.Module(wanted, []), TEST_FILE, "exec"), namespace)  # pylint: disable=exec-used
  return namespace["REFERENCE_RUNS"]


def output_names(name, num_outputs):
  if num_outputs == 1:
    return [name + ".tfrecord"]
  return ["%s_%d.tfrecord" % (name, i) for i in range(num_outputs)]


def flag_arguments(values):
  arguments = []
  for key, value in sorted(values.items()):
    if isinstance(value, bool):
      value = "true" if value else "false"
    arguments.append("--%s=%s" % (key, value))
  return arguments


def run_original(script, name, run, output_dir, shared_dir):
  """Runs the original script for one entry; returns the written file names."""
  shared_inputs, own_inputs, vocab, num_outputs, values = run
  inputs = ([os.path.join(shared_dir, p) for p in shared_inputs]
            + [os.path.join(TEST_DATA, p) for p in own_inputs])
  names = output_names(name, num_outputs)
  outputs = [os.path.join(output_dir, n) for n in names]
  for path in inputs + [os.path.join(TEST_DATA, vocab)]:
    if not os.path.isfile(path):
      sys.exit("%s: input %s does not exist" % (name, path))
  for path in inputs + outputs:
    # The original splits --input_file and --output_file at commas and globs
    # each input.
    if any(c in path for c in ",*?["):
      sys.exit("%s: path %s has a character the original would misread" % (name, path))
  command = [sys.executable, script,
             "--input_file=" + ",".join(inputs),
             "--output_file=" + ",".join(outputs),
             "--vocab_file=" + os.path.join(TEST_DATA, vocab)] + flag_arguments(values)
  env = dict(os.environ)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
  if result.returncode != 0:
    sys.stderr.write(result.stderr[-5000:])
    sys.exit("%s: the original create_pretraining_data.py failed (exit %d)"
             % (name, result.returncode))
  print("%s: %s" % (name, " ".join(command[2:])))
  return names


# --- Comparison ------------------------------------------------------------


def tfrecord_payloads(path):
  """The records of a TFRecord file (8-byte length, 4-byte length CRC,
  payload, 4-byte payload CRC)."""
  with open(path, "rb") as f:
    data = f.read()
  payloads, offset = [], 0
  while offset < len(data):
    if offset + 12 > len(data):
      raise ValueError("%s: truncated record header at byte %d" % (path, offset))
    size = int.from_bytes(data[offset:offset + 8], "little")
    start = offset + 12
    if start + size + 4 > len(data):
      raise ValueError("%s: truncated record at byte %d" % (path, offset))
    payloads.append(data[start:start + size])
    offset = start + size + 4
  return payloads


def _varint(data, offset):
  value, shift = 0, 0
  while True:
    byte = data[offset]
    offset += 1
    value |= (byte & 0x7F) << shift
    shift += 7
    if not byte & 0x80:
      return value, offset


def _length_delimited_fields(data):
  """(field number, bytes) of a message made only of length-delimited fields."""
  fields, offset = [], 0
  while offset < len(data):
    tag, offset = _varint(data, offset)
    if tag & 7 != 2:
      raise ValueError("unexpected wire type %d" % (tag & 7))
    size, offset = _varint(data, offset)
    fields.append((tag >> 3, data[offset:offset + size]))
    offset += size
  return fields


def feature_entries(payload):
  """{feature name: the serialized map entry} of a tf.train.Example
  (Example.features = field 1, Features.feature = map field 1, entry key =
  field 1), so entries can be compared byte for byte whatever their order."""
  outer = _length_delimited_fields(payload)
  if [number for number, _ in outer] != [1]:
    raise ValueError("not an Example with exactly one Features field")
  entries = {}
  for number, entry in _length_delimited_fields(outer[0][1]):
    if number != 1:
      raise ValueError("unexpected Features field %d" % number)
    key = [value for n, value in _length_delimited_fields(entry) if n == 1]
    name = key[0].decode("utf-8") if key else ""
    if name in entries:
      raise ValueError("feature %r twice in one record" % name)
    entries[name] = entry
  return entries


def _describe(entry):
  """A feature map entry's values (packed int64_list or float_list), for
  messages."""
  try:
    value = [v for n, v in _length_delimited_fields(entry) if n == 2][0]
    (kind, values), = _length_delimited_fields(value)
    packed = b"".join(v for n, v in _length_delimited_fields(values) if n == 1)
    if kind == 2:  # float_list
      return str(list(struct.unpack("<%df" % (len(packed) // 4), packed)))
    if kind == 3:  # int64_list
      numbers, offset = [], 0
      while offset < len(packed):
        number, offset = _varint(packed, offset)
        numbers.append(number - (1 << 64) if number >= 1 << 63 else number)
      return str(numbers)
  except (ValueError, IndexError):
    pass
  return "bytes " + entry.hex()


def compare(ours, theirs):
  """(equal, what) for a regenerated file and a committed one."""
  if not os.path.exists(theirs):
    return False, "no committed file %s" % theirs
  with open(ours, "rb") as f:
    our_bytes = f.read()
  with open(theirs, "rb") as f:
    their_bytes = f.read()
  if our_bytes == their_bytes:
    return True, "byte-identical (%d bytes)" % len(our_bytes)
  our_records, their_records = tfrecord_payloads(ours), tfrecord_payloads(theirs)
  if len(our_records) != len(their_records):
    return False, "%d records, committed %d" % (len(our_records), len(their_records))
  orders = set()
  for index, (our_record, their_record) in enumerate(zip(our_records, their_records)):
    our_entries, their_entries = feature_entries(our_record), feature_entries(their_record)
    if set(our_entries) != set(their_entries):
      return False, "record %d: features %s, committed %s" % (
          index, sorted(our_entries), sorted(their_entries))
    for name in sorted(our_entries):
      if our_entries[name] != their_entries[name]:
        return False, "record %d, feature %s: %s, committed %s" % (
            index, name, _describe(our_entries[name]), _describe(their_entries[name]))
    orders.add((tuple(our_entries), tuple(their_entries)))
  return True, ("same %d records, every feature entry byte-identical; only the order of "
                "the feature-map entries differs (%s) (%d vs %d bytes)" % (
                    len(our_records),
                    "; ".join("ours %s, committed %s" % (",".join(a), ",".join(b))
                              for a, b in sorted(orders)),
                    len(our_bytes), len(their_bytes)))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="a checkout of google-research/bert")
  parser.add_argument("--output_dir", default=None,
                      help="where to write the .tfrecord files (default: a new temporary "
                      "directory)")
  parser.add_argument("--check", action="store_true",
                      help="compare with tests/data/pretraining_reference; exit 1 on a "
                      "difference")
  parser.add_argument("--runs", default="",
                      help="comma-separated REFERENCE_RUNS names (default: all)")
  parser.add_argument("--shared_dir", default=SHARED_DATA,
                      help="the shared data folder (default: ../shared/data)")
  args = parser.parse_args()

  runs = reference_runs()
  selected = [r for r in args.runs.split(",") if r] or sorted(runs)
  unknown = [r for r in selected if r not in runs]
  if unknown:
    sys.exit("no such run: %s (REFERENCE_RUNS has %s)" % (", ".join(unknown), ", ".join(runs)))
  output_dir = args.output_dir or tempfile.mkdtemp(prefix="pretraining_reference_")
  os.makedirs(output_dir, exist_ok=True)
  output_dir = os.path.abspath(output_dir)
  if args.check and os.path.realpath(output_dir) == os.path.realpath(COMMITTED):
    sys.exit("--check with --output_dir=%s would compare the files with themselves" % COMMITTED)

  code = original.code_dir(args.original_dir)
  try:
    written = []
    for name in selected:
      written.extend(run_original(os.path.join(code, "create_pretraining_data.py"),
                                  name, runs[name], output_dir, args.shared_dir))
  finally:
    original.cleanup(code)
  print("wrote %d files to %s" % (len(written), output_dir))

  if args.check:
    failed = False
    for name in written:
      equal, what = compare(os.path.join(output_dir, name), os.path.join(COMMITTED, name))
      failed |= not equal
      print("%s %s: %s" % ("OK  " if equal else "DIFF", name, what))
    if failed:
      sys.exit(1)


if __name__ == "__main__":
  main()
