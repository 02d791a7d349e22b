"""Remakes the tokenizer reference files of tests/data with the original
google-research/bert tokenization.py (loaded through original.load):

  tokenizer_cases.json        the texts of the committed file, each with the
                              tokens of the original FullTokenizer for its
                              vocabulary and casing
  tokenizer_ascii_cases.json  the same for the committed ASCII texts
                              (uncased vocabulary, both casings)
  tokenizer_codepoint_blocks.json
                              for each of the 0x110000 / 256 blocks of code
                              points, the first 16 hex digits of the SHA-256
                              of the original's BasicTokenizer tokens, "||"
                              and FullTokenizer tokens of the block's text
                              (every code point c of the block except
                              surrogates as the word "x" c "y" c, words joined
                              by spaces), one per line, UTF-8; uncased
                              vocabulary, lower-cased then cased
  tokenizer_random_mixed.json for the random texts of random_texts.py (mixed
                              scripts, combining marks, control, private-use
                              and space characters, emoji, vocabulary words,
                              over-long words; some with lone surrogates),
                              per setting (vocabulary, casing) and group of
                              GROUP texts, the first 16 hex digits of the
                              SHA-256 of one line per text (its ids joined
                              by spaces); "bytes": the same for texts given
                              as UTF-8 bytes with invalid bytes put in
  tokenizer_shared_files.json for whole files of ../shared/data, split at
                              "\\n" after reading as UTF-8 text, the number of
                              ids of the original FullTokenizer over all
                              lines and the SHA-256 of one line per input
                              line (its ids joined by spaces), for every
                              vocabulary and casing

The case files keep their input texts: only the tokens are recomputed. The
JSON is written exactly as the committed files are laid out (indent 0 for
the case files, one line for the blocks, indent 1 for the shared files; no
final newline), so --check compares bytes; when bytes differ it also lists
the differing entries.

    bench/output/envs/original/bin/python \\
        tests/reference_makers/make_tokenizer_references.py \\
        --original_dir=/path/to/bert [--output_dir=DIR] [--check] \\
        [--only=tokenizer_cases.json,...]
"""

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
TEST_DATA = os.path.join(REPO_ROOT, "tests", "data")
SHARED_DATA = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))
VOCABS = (("uncased", "vocab/bert_uncased_vocab.txt"),
          ("chinese", "vocab/bert_chinese_vocab.txt"))
# The files of ../shared/data in tokenizer_shared_files.json, in its order.
SHARED_FILES = ("sample_text.txt", "glue/CoLA/dev.tsv", "glue/MRPC/dev.tsv",
                "squad/v1.1_mixed_subset_UMC_Force_plus_nonSQuAD.json",
                "glue/RTE/dev.tsv", "glue/WNLI/train.tsv", "glue/QNLI/dev.tsv")
NUM_BLOCKS = 0x110000 // 256

sys.path.insert(0, HERE)
import original  # pylint: disable=g-import-not-at-top,wrong-import-position
import random_texts  # pylint: disable=g-import-not-at-top,wrong-import-position

# tokenizer_random_mixed.json: (label, vocabulary, lower-case, seed), texts
# per setting, texts per digest.
RANDOM_SETTINGS = (("uncased_lower", "uncased", True, 2026),
                   ("uncased_cased", "uncased", False, 2027),
                   ("chinese_lower", "chinese", True, 2028),
                   ("bytes", "uncased", True, 2029))
RANDOM_COUNT = 20000
GROUP = 500


def vocabulary_words(path):
  """The whole-word entries of a vocabulary file, in file order (what
  random_texts draws words from)."""
  with open(path, encoding="utf-8") as f:
    lines = [line.strip() for line in f]
  return [w for w in lines if len(w) > 1 and not w.startswith(("##", "["))]


def random_setting_texts(label, vocab_path, seed):
  texts = random_texts.random_texts(seed, RANDOM_COUNT, vocabulary_words(vocab_path))
  if label == "bytes":
    texts = random_texts.with_invalid_utf8(seed, texts)
  return texts


def group_digests(id_rows):
  """First 16 hex digits of the SHA-256 of each GROUP rows (ids joined by spaces)."""
  digests = []
  for lo in range(0, len(id_rows), GROUP):
    digest = hashlib.sha256()
    for ids in id_rows[lo:lo + GROUP]:
      digest.update((" ".join(str(i) for i in ids) + "\n").encode("ascii"))
    digests.append(digest.hexdigest()[:16])
  return digests


class Original(object):
  """The original's tokenizers, made once per vocabulary and casing."""

  def __init__(self, tokenization):
    self.tokenization = tokenization
    self._full = {}

  def full(self, vocab, do_lower_case):
    key = (vocab, do_lower_case)
    if key not in self._full:
      path = os.path.join(TEST_DATA, dict(VOCABS)[vocab])
      self._full[key] = self.tokenization.FullTokenizer(
          vocab_file=path, do_lower_case=do_lower_case)
    return self._full[key]

  def basic(self, do_lower_case):
    return self.tokenization.BasicTokenizer(do_lower_case=do_lower_case)


def committed(name):
  with open(os.path.join(TEST_DATA, name), encoding="utf-8") as f:
    return json.load(f)


def make_cases(tokenizers, _):
  old = committed("tokenizer_cases.json")
  cases = []
  for case in old["cases"]:
    tokens = tokenizers.full(case["vocab"], case["do_lower_case"]).tokenize(case["text"])
    cases.append({"vocab": case["vocab"], "do_lower_case": case["do_lower_case"],
                  "text": case["text"], "tokens": tokens})
  return json.dumps({"generator": "original google-research/bert tokenization.FullTokenizer",
                     "cases": cases}, indent=0)


def make_ascii_cases(tokenizers, _):
  old = committed("tokenizer_ascii_cases.json")
  cases = []
  for case in old["cases"]:
    tokenizer = tokenizers.full("uncased", case["do_lower_case"])
    cases.append({"do_lower_case": case["do_lower_case"], "texts": case["texts"],
                  "tokens": [tokenizer.tokenize(text) for text in case["texts"]]})
  return json.dumps({"generator": "original google-research/bert tokenization.FullTokenizer, "
                                  "uncased vocabulary",
                     "cases": cases}, indent=0)


def block_text(block):
  """Each non-surrogate code point c of the block as the word x c y c."""
  words = []
  for code_point in range(block * 256, (block + 1) * 256):
    if 0xD800 <= code_point <= 0xDFFF:
      continue
    words.append("x%sy%s" % (chr(code_point), chr(code_point)))
  return " ".join(words)


def make_codepoint_blocks(tokenizers, _):
  hashes = {}
  for label, do_lower_case in (("lower", True), ("cased", False)):
    basic, full = tokenizers.basic(do_lower_case), tokenizers.full("uncased", do_lower_case)
    hashes[label] = []
    for block in range(NUM_BLOCKS):
      text = block_text(block)
      lines = basic.tokenize(text) + ["||"] + full.tokenize(text)
      digest = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass"))
      hashes[label].append(digest.hexdigest()[:16])
  return json.dumps(hashes)


def make_shared_files(tokenizers, shared_dir):
  entries = []
  for name in SHARED_FILES:
    path = os.path.join(shared_dir, name)
    if not os.path.isfile(path):
      sys.exit("%s does not exist (--shared_dir)" % path)
    with open(path, encoding="utf-8") as f:
      lines = f.read().split("\n")
    for vocab, _ in VOCABS:
      for do_lower_case in (True, False):
        tokenizer = tokenizers.full(vocab, do_lower_case)
        digest, count = hashlib.sha256(), 0
        for line in lines:
          ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))
          count += len(ids)
          digest.update((" ".join(str(i) for i in ids) + "\n").encode("ascii"))
        entries.append({"file": name, "vocab": vocab, "do_lower_case": do_lower_case,
                        "num_ids": count, "sha256": digest.hexdigest()})
  return json.dumps(entries, indent=1)


def make_random_mixed(tokenizers, _):
  result = {}
  for label, vocab, do_lower_case, seed in RANDOM_SETTINGS:
    tokenizer = tokenizers.full(vocab, do_lower_case)
    texts = random_setting_texts(label, os.path.join(TEST_DATA, dict(VOCABS)[vocab]), seed)
    rows = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in texts]
    result[label] = {"num_ids": sum(len(r) for r in rows), "groups": group_digests(rows)}
  return json.dumps(result, indent=1)


MAKERS = {
    "tokenizer_cases.json": make_cases,
    "tokenizer_ascii_cases.json": make_ascii_cases,
    "tokenizer_codepoint_blocks.json": make_codepoint_blocks,
    "tokenizer_shared_files.json": make_shared_files,
    "tokenizer_random_mixed.json": make_random_mixed,
}


def differences(ours, theirs, where="", limit=10):
  """Paths (and values) where two parsed JSON values differ, at most `limit`."""
  found = []

  def walk(a, b, path):
    if len(found) >= limit:
      return
    if isinstance(a, dict) and isinstance(b, dict):
      for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
          found.append("%s/%s: only in %s" % (path, key, "ours" if key in a else "committed"))
        else:
          walk(a[key], b[key], "%s/%s" % (path, key))
    elif (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
          and (len(a) > 50 or not all(isinstance(x, str) for x in a + b))):
      # Short lists of strings (tokens) are shown whole, others item by item.
      for index, (x, y) in enumerate(zip(a, b)):
        walk(x, y, "%s[%d]" % (path, index))
    elif a != b or type(a) is not type(b):
      found.append("%s: ours %s, committed %s" % (
          path, json.dumps(a)[:300], json.dumps(b)[:300]))
  walk(ours, theirs, where)
  return found


def compare(name, text):
  """(equal, what) for a regenerated file's text and the committed file."""
  path = os.path.join(TEST_DATA, name)
  with open(path, "rb") as f:
    their_bytes = f.read()
  our_bytes = text.encode("utf-8")
  if our_bytes == their_bytes:
    return True, "byte-identical (%d bytes)" % len(our_bytes)
  found = differences(json.loads(text), json.loads(their_bytes.decode("utf-8")))
  if not found:
    return False, "same content but the bytes differ (layout: %d vs %d bytes)" % (
        len(our_bytes), len(their_bytes))
  return False, "content differs:\n    " + "\n    ".join(found)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="a checkout of google-research/bert")
  parser.add_argument("--output_dir", default=None,
                      help="where to write the JSON files (default: a new temporary "
                      "directory)")
  parser.add_argument("--check", action="store_true",
                      help="compare with the committed files in tests/data; exit 1 on a "
                      "difference")
  parser.add_argument("--only", default="",
                      help="comma-separated file names to make (default: all)")
  parser.add_argument("--shared_dir", default=SHARED_DATA,
                      help="the shared data folder (default: ../shared/data)")
  args = parser.parse_args()

  selected = [n for n in args.only.split(",") if n] or list(MAKERS)
  unknown = [n for n in selected if n not in MAKERS]
  if unknown:
    sys.exit("cannot make %s (choose from %s)" % (", ".join(unknown), ", ".join(MAKERS)))
  output_dir = os.path.abspath(args.output_dir or tempfile.mkdtemp(prefix="tokenizer_refs_"))
  os.makedirs(output_dir, exist_ok=True)
  if args.check and os.path.realpath(output_dir) == os.path.realpath(TEST_DATA):
    sys.exit("--check with --output_dir=%s would compare the files with themselves" % TEST_DATA)

  _, tokenization, _, _, code = original.load(args.original_dir)
  tokenizers = Original(tokenization)
  texts = {}
  try:
    for name in selected:
      start = time.time()
      texts[name] = MAKERS[name](tokenizers, args.shared_dir)
      with open(os.path.join(output_dir, name), "w", encoding="utf-8", newline="") as f:
        f.write(texts[name])
      print("wrote %s (%.0f s)" % (os.path.join(output_dir, name), time.time() - start))
  finally:
    original.cleanup(code)

  if args.check:
    failed = False
    for name in selected:
      equal, what = compare(name, texts[name])
      failed |= not equal
      print("%s %s: %s" % ("OK  " if equal else "DIFF", name, what))
    if failed:
      sys.exit(1)


if __name__ == "__main__":
  main()
