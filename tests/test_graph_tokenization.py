"""GraphTokenizer (TF ops) gives FullTokenizer's ids, saved and loaded too.

The reference data are the original's outputs that tests/test_tokenization.py
checks FullTokenizer against (see tests/data/README.md).
"""

import hashlib
import json
import os
import random
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from conftest import blocks_with_reference_unicode, data_file, shared_path
from data_prep import tokenization
from serving import tokenizer as graph_tokenizer

VOCABS = {
    "uncased": "vocab/bert_uncased_vocab.txt",
    "chinese": "vocab/bert_chinese_vocab.txt",
}
# Files of tokenizer_shared_files.json checked here; QNLI (1.4 MB) is left to
# test_tokenization.py to keep this file fast.
SHARED_FILES = ("sample_text.txt", "glue/CoLA/dev.tsv", "glue/MRPC/dev.tsv",
                "glue/RTE/dev.tsv", "glue/WNLI/train.tsv",
                "squad/v1.1_mixed_subset_UMC_Force_plus_nonSQuAD.json")
BATCH = 4096
TEXTS = tf.TensorSpec([None], tf.string)


class _Pair(object):
  """FullTokenizer and GraphTokenizer for one vocabulary and casing."""

  def __init__(self, vocab_file, do_lower_case):
    self.python = tokenization.FullTokenizer(vocab_file, do_lower_case)
    self.graph = graph_tokenizer.GraphTokenizer(vocab_file, do_lower_case)
    self._functions = {
        "ids": self.graph.tokenize_to_ids, "tokens": self.graph.tokenize,
        "all": self._basic_tokens_pieces_and_ids}

  def _basic_tokens_pieces_and_ids(self, texts):
    """The steps of tokenize_to_ids, each returned (one pass for all three)."""
    words = self.graph.basic_tokenize(texts)
    pieces = self.graph._word_pieces(words)
    ids = self.graph._vocab_table.lookup(pieces.flat_values)
    return words, pieces, pieces.with_flat_values(tf.cast(ids, tf.int32))

  def _call(self, name, texts):
    """Runs a function on texts in batches; its outputs as Python lists."""
    function = self._functions[name]
    if not isinstance(function, tf.types.experimental.GenericFunction):
      function = tf.function(function, input_signature=[TEXTS])
      self._functions[name] = function
    rows = None
    for i in range(0, max(len(texts), 1), BATCH):
      out = tf.nest.flatten(function(tf.constant(texts[i:i + BATCH], tf.string)))
      lists = [o.to_list() for o in out]
      rows = lists if rows is None else [r + l for r, l in zip(rows, lists)]
    return rows

  def ids(self, texts):
    return self._call("ids", texts)[0]

  def tokens(self, texts):
    return _decoded(self._call("tokens", texts)[0])

  def steps(self, texts):
    """(basic tokens, word pieces, ids) per text."""
    words, pieces, ids = self._call("all", texts)
    return _decoded(words), _decoded(pieces), ids


def _decoded(rows):
  return [[token.decode("utf-8") for token in row] for row in rows]


@pytest.fixture(scope="module")
def pairs():
  cache = {}

  def get(vocab, do_lower_case):
    key = (vocab, do_lower_case)
    if key not in cache:
      cache[key] = _Pair(data_file(VOCABS[vocab]), do_lower_case)
    return cache[key]

  return get


def _load(name):
  with open(data_file(name), encoding="utf-8") as f:
    return json.load(f)


def _assert_same_as_python(pair, texts):
  """Basic tokens, word pieces and ids all equal the Python tokenizer's.

  Basic tokens matter: a word with an exotic character is one [UNK] whatever
  its characters, so ids alone would hide most differences.
  """
  basic = tokenization.BasicTokenizer(pair.python.basic_tokenizer.do_lower_case)
  got = list(zip(*pair.steps(texts), pair.ids(texts)))
  assert len(got) == len(texts)
  for text, (words, pieces, ids, public_ids) in zip(texts, got):
    want = (basic.tokenize(text), pair.python.tokenize(text),
            pair.python.tokenize_to_ids(text))
    assert (words, pieces, ids) == want, text
    assert public_ids == ids, text


def test_reference_cases(pairs):
  by_setting = {}
  for case in _load("tokenizer_cases.json")["cases"]:
    by_setting.setdefault((case["vocab"], case["do_lower_case"]), []).append(case)
  for (vocab, do_lower_case), cases in sorted(by_setting.items()):
    pair = pairs(vocab, do_lower_case)
    texts = [case["text"] for case in cases]
    _, pieces, ids = pair.steps(texts)
    assert pieces == [case["tokens"] for case in cases]
    assert ids == [pair.python.tokenize_to_ids(text) for text in texts]
    assert pair.ids(texts) == ids


def _block_text(block):
  chars = [chr(cp) for cp in range(block * 256, block * 256 + 256)
           if not 0xD800 <= cp <= 0xDFFF]
  return " ".join("x" + c + "y" + c for c in chars)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_every_code_point(pairs, do_lower_case):
  """All 1.1M code points, each inside a word: the original's tokens and ids.

  Compared with the hashes test_tokenization.py checks FullTokenizer
  against, which is much faster than running FullTokenizer here.
  """
  expected = _load("tokenizer_codepoint_blocks.json")[
      "lower" if do_lower_case else "cased"]
  pair = pairs("uncased", do_lower_case)
  words, pieces, ids = pair.steps([_block_text(b) for b in range(len(expected))])
  vocab = pair.python.vocab
  bad_blocks = []
  compared = blocks_with_reference_unicode()
  assert len(compared) > 4200  # Nearly all: a newer Unicode changes a few dozen.
  for block in compared:
    want = expected[block]
    out = words[block] + ["||"] + pieces[block]
    got = hashlib.sha256("\n".join(out).encode("utf-8", "surrogatepass"))
    if got.hexdigest()[:16] != want or ids[block] != [
        vocab[p] for p in pieces[block]]:
      bad_blocks.append(hex(block * 256))
  assert not bad_blocks, "code point blocks differing: %s" % bad_blocks[:10]


@pytest.mark.parametrize("vocab", ["uncased", "chinese"])
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_real_files(pairs, vocab, do_lower_case):
  """Whole GLUE/SQuAD/sample files line by line: the original's hashed ids."""
  pair = pairs(vocab, do_lower_case)
  refs = [ref for ref in _load("tokenizer_shared_files.json")
          if ref["file"] in SHARED_FILES and ref["vocab"] == vocab
          and ref["do_lower_case"] == do_lower_case]
  assert len(refs) == len(SHARED_FILES)
  for ref in refs:
    with open(shared_path(ref["file"]), encoding="utf-8") as f:
      lines = f.read().split("\n")
    digest, num_ids = hashlib.sha256(), 0
    for row in pair.ids(lines):
      num_ids += len(row)
      digest.update((" ".join(map(str, row)) + "\n").encode())
    assert (num_ids, digest.hexdigest()) == (ref["num_ids"], ref["sha256"]), ref


def test_attributes(pairs):
  tok = pairs("uncased", True).graph
  vocab = pairs("uncased", True).python.vocab
  assert (tok.cls_id, tok.sep_id, tok.unk_id) == (
      vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"])
  assert all(isinstance(i, int) for i in (tok.cls_id, tok.sep_id, tok.unk_id))
  assert tok.vocab_size == len(vocab) == 30522


def _random_texts(alphabet, count, max_length, seed):
  rng = random.Random(seed)
  return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_length)))
          for _ in range(count)]


# Final sigma contexts: Greek letters of both cases, sigmas, characters that
# are case-ignorable (apostrophes, period, U+0345 also cased, U+02B0, the soft
# hyphen and ZWJ which cleaning drops), characters cleaning drops that are
# not (controls, U+FFFD), cased non-letters (U+00AA), breaks.
_GREEK = ("\u03a3\u03a3\u03a3\u03c3\u03c2\u0391\u03b1\u039f\u03bf\u03ac\u0386"
          "'\u2019.:,\u00b7\u0301\u0345\u02b0\u00ad\u200d\x05\x7f\ufffd"
          "\u00aa1 \n\u00a0\u2028a\u4e00-")


def _lower_by_classes(text, cased, ignorable):
  """str.lower() as CPython does it, with Final_Sigma decided by the classes."""
  out = []
  for i, char in enumerate(text):
    if char != "\u03a3":
      out.append(char.lower())
      continue
    j = i - 1
    while j >= 0 and ord(text[j]) in ignorable:
      j -= 1
    final = j >= 0 and ord(text[j]) in cased
    j = i + 1
    while j < len(text) and ord(text[j]) in ignorable:
      j += 1
    final = final and (j == len(text) or ord(text[j]) not in cased)
    out.append("\u03c2" if final else "\u03c3")
  return "".join(out)


def test_sigma_classes_reproduce_str_lower():
  cased, ignorable = graph_tokenizer._sigma_context_classes()
  rng = random.Random(5)
  others = [cp for cp in range(0x3000) if cp not in cased and cp not in ignorable]
  groups = (sorted(cased), sorted(ignorable), others)
  for _ in range(20):
    alphabet = "\u03a3" * 10 + "".join(
        chr(rng.choice(group)) for group in groups for _ in range(10))
    for text in _random_texts(alphabet, 300, 8, seed=rng.random()):
      assert _lower_by_classes(text, cased, ignorable) == text.lower(), text


def test_final_sigma_matches_python_lower(pairs):
  pair = pairs("uncased", True)
  basic = tokenization.BasicTokenizer(do_lower_case=True)
  texts = _random_texts(_GREEK, 3000, 8, seed=1) + [
      "\u039f\u0394\u039f\u03a3", "\u03a3", "\u0391\u03a3\u03a3",
      "\u0391\u03a3'", "\u0391'\u03a3", "\u0391\u03a3'\u03a3", "\u0391\u03a3.\u0391",
      "1\u03a3", "\u0391\u00ad\u03a3\u200d", "\u0391\x05\u03a3", "\u0391\u03a3\x00\u0391",
      "\u0391\u03a3\n", "\u0391\u03a3\u2028\u0391",
      "\u0391\u03a3\u4e00", "\u0391\u03a3\u00aa", "\u0345\u03a3", "\u0391\u0345\u03a3"]
  _assert_same_as_python(pair, texts)
  assert any("\u03c2" in "".join(basic.tokenize(t)) for t in texts)


def test_hand_written_cases(pairs):
  pair = pairs("uncased", True)
  texts = [
      "", " ", "\u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u039f\u03a3.",
      "a" * 200, "a" * 201, "\u0436" * 200, "\u0436" * 201,
      "\u1100" * 200 + "x",
      # A Hangul syllable is 2 or 3 Jamo after NFD; the length limit counts
      # Jamo. 한 is 3 of them.
      "\ud55c" * 66, "\ud55c" * 67, "\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4",
      "foo\u2028bar", "foo\u2029bar\u0085baz\u000bq\u001cr",
      "\u0130stanbul \u00c9T\u00c9 na\u00efve \u212b \ufb01",
      "\uf900\u8c48 \U0002f800x",
      "HeLLo!how  \n Are yoU?  ", "a\x05b\x00c\ufffdd\u200be",
  ]
  _assert_same_as_python(pair, texts)
  assert pair.tokens(texts) == [pair.python.tokenize(text) for text in texts]


# Non-Mn combining characters with a class (kept by accent stripping), Mn
# marks of other classes, a class-0 Mn mark (U+034F) that blocks reordering,
# musical symbols that decompose into such characters.
_KEPT_MARKS = ("\U0001d16d\U0001d165\U0001d16e\u302e\u302f\u1715\U00016ff0"
               "\u0301\u0316\u05b0\u034f\U0001d15f\U0001d160\U0001d1bb"
               "\u00e9\u0130xa ")


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_canonical_reordering_of_kept_marks(pairs, do_lower_case):
  pair = pairs("uncased", do_lower_case)
  texts = _random_texts(_KEPT_MARKS, 1500, 6, seed=2) + [
      "x\U0001d16d\U0001d165y", "x\U0001d16d\u034f\U0001d165y",
      "x\U0001d16d\u0301\U0001d165y", "\u302e\u1715", "\U0001d160\U0001d16d"]
  _assert_same_as_python(pair, texts)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_random_unicode_text(pairs, do_lower_case):
  alphabet = ("aZ\u00c9\u00df\u0130\u03a3\u03c3'.,!?-$ \t\n\u00a0\u3000\u2028"
              "\u4e00\u4e8c\ud55c\u0301\u0345\u00ad\u200d\x00\x7f\ufffd"
              "\U0001f600\U0001d16d\U0001d165\u302e\u0e01\u0e31\u0627\u064b")
  texts = _random_texts(alphabet, 2000, 12, seed=3)
  _assert_same_as_python(pairs("uncased", do_lower_case), texts)
  _assert_same_as_python(pairs("chinese", do_lower_case), texts)


def test_batches_of_every_size(pairs):
  pair = pairs("uncased", True)
  assert pair.ids([]) == []
  assert pair.ids([""]) == [[]]
  assert pair.ids(["", "Hello!", ""]) == [[], pair.python.tokenize_to_ids("Hello!"), []]


def test_invalid_utf8_is_dropped_like_python(pairs):
  pair = pairs("uncased", True)
  pieces = [b"ab", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x92\xa9", b"\x80",
            b"\xc3", b"\xe2\x82", b"\xf0\x9f\x92", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
            b"\xc0\xaf", b"\xe0\x80\xaf", b"\xfe", b"\xff", b" ", b"\xce\xa3"]
  rng = random.Random(4)
  texts = [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
           for _ in range(500)]
  _assert_same_as_python(pair, texts)


def _tiny_vocab(tmp_path, tokens):
  path = tmp_path / "vocab.txt"
  path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return str(path)


def test_tiny_vocab_with_duplicate(tmp_path):
  path = _tiny_vocab(tmp_path, ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "dup",
                                "##ed", "dup", "un", "runn", "##ing", ",", " x "])
  pair = _Pair(path, do_lower_case=True)
  _assert_same_as_python(
      pair, ["UNwant\u00e9d,running", "dup dupdup x", "unwantedX running", ""])
  assert pair.ids(["dup"]) == [[7]]
  assert pair.graph.vocab_size == 13
  assert (pair.graph.unk_id, pair.graph.cls_id, pair.graph.sep_id) == (0, 1, 2)
  with pytest.raises(ValueError, match=r"\[UNK\]"):
    graph_tokenizer.GraphTokenizer(_tiny_vocab(tmp_path, ["a", "b"]))


_LOAD_AND_RUN = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # Registers the WordPiece op, as TF Serving links it.
    loaded = tf.saved_model.load(sys.argv[1])
    texts = tf.constant(json.loads(sys.argv[2]))
    out = loaded.signatures["serving_default"](texts=texts)
    ids = tf.RaggedTensor.from_row_splits(out["token_ids"], out["row_splits"])
    print(json.dumps(ids.to_list()))
    assert sorted(m for m in sys.modules if m.split(".")[0] in
                  ("data_prep", "tokenization", "modeling")) == []
""")


def test_saved_model_runs_with_tensorflow_text_only(pairs, tmp_path):
  pair = pairs("uncased", True)

  class Serving(tf.Module):

    def __init__(self, tokenizer):
      super().__init__()
      self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="texts")])
    def tokenize(self, texts):
      ids = self.tokenizer.tokenize_to_ids(texts)
      return {"token_ids": ids.flat_values, "row_splits": ids.row_splits}

  module = Serving(pair.graph)
  export_dir = str(tmp_path / "saved")
  tf.saved_model.save(module, export_dir,
                      signatures={"serving_default": module.tokenize})
  with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
    assert b"_XlaMustCompile" not in f.read()
  texts = ["Hello, World!", "\u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u039f\u03a3.",
           "x\U0001d16d\U0001d165y \u535a\u63a8 na\u00efve", "", "a" * 201]
  env = dict(os.environ, PYTHONPATH="", TF_CPP_MIN_LOG_LEVEL="2")
  result = subprocess.run(
      [sys.executable, "-c", _LOAD_AND_RUN, export_dir, json.dumps(texts)],
      cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  got = json.loads(result.stdout.strip().splitlines()[-1])
  assert got == [pair.python.tokenize_to_ids(t) for t in texts]
