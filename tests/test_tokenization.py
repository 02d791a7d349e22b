"""The tokenizer against reference outputs of the original tokenization.py.

tests/data/tokenizer_*.json were produced by running the original release's
FullTokenizer/BasicTokenizer (see tests/data/README.md). Both of our paths
are checked: the Python tokenizer (`tokenize`, `tokenize_to_ids`) and the
compiled bulk path (`tokenize_to_ids_batch`).
"""

import hashlib
import json

import numpy as np
import pytest

from conftest import blocks_with_reference_unicode, shared_path, data_file
from data_prep import tokenization
from reference_makers import make_tokenizer_references as references

VOCABS = {
    "uncased": "vocab/bert_uncased_vocab.txt",
    "chinese": "vocab/bert_chinese_vocab.txt",
}


@pytest.fixture(autouse=True)
def compiled_from_the_first_batch(monkeypatch):
  """Every batch here goes through the compiled path (by default small
  batches stay in Python: test_small_work_stays_in_python_until_it_adds_up)."""
  monkeypatch.setattr(tokenization.FullTokenizer, "compile_after_characters", 0)


@pytest.fixture(scope="module")
def tokenizers():
  cache = {}

  def get(vocab, do_lower_case):
    key = (vocab, do_lower_case)
    if key not in cache:
      cache[key] = tokenization.FullTokenizer(
          data_file(VOCABS[vocab]), do_lower_case=do_lower_case)
    return cache[key]

  return get


def _load(name):
  with open(data_file(name), encoding="utf-8") as f:
    return json.load(f)


def test_reference_cases_token_for_token(tokenizers):
  cases = _load("tokenizer_cases.json")["cases"]
  assert len(cases) > 700
  mismatches = []
  for case in cases:
    tok = tokenizers(case["vocab"], case["do_lower_case"])
    got = tok.tokenize(case["text"])
    if got != case["tokens"]:
      mismatches.append((case["text"], case["do_lower_case"], got, case["tokens"]))
    ids = tok.tokenize_to_ids(case["text"])
    assert ids == tok.convert_tokens_to_ids(case["tokens"])
  assert not mismatches, mismatches[:3]
  for key in {(c["vocab"], c["do_lower_case"]) for c in cases}:  # The compiled path.
    mine = [c for c in cases if (c["vocab"], c["do_lower_case"]) == key]
    tok = tokenizers(*key)
    flat, splits = tok.tokenize_to_ids_batch([c["text"] for c in mine])
    for i, case in enumerate(mine):
      assert flat[splits[i]:splits[i + 1]].tolist() == tok.convert_tokens_to_ids(
          case["tokens"]), (key, case["text"])


@pytest.mark.parametrize("case", [0, 1], ids=["lower", "cased"])
def test_random_ascii_matches_original(tokenizers, case):
  """Punctuation-heavy ASCII words: the fast split paths (letters and digits
  only; ASCII) against the original's character loop."""
  reference = _load("tokenizer_ascii_cases.json")["cases"][case]
  tok = tokenizers("uncased", reference["do_lower_case"])
  got = [tok.tokenize(t) for t in reference["texts"]]
  assert got == reference["tokens"]
  flat, splits = tok.tokenize_to_ids_batch(reference["texts"])
  assert flat.tolist() == [i for t in reference["tokens"] for i in tok.convert_tokens_to_ids(t)]
  assert np.diff(splits).tolist() == [len(t) for t in reference["tokens"]]


def _block_text(block):
  chars = [chr(cp) for cp in range(block * 256, block * 256 + 256)
           if not 0xD800 <= cp <= 0xDFFF]
  return " ".join("x" + c + "y" + c for c in chars)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_every_code_point_matches_original(tokenizers, do_lower_case):
  """All 1.1M code points, each inside a word, basic and full tokenization."""
  expected = _load("tokenizer_codepoint_blocks.json")[
      "lower" if do_lower_case else "cased"]
  tok = tokenizers("uncased", do_lower_case)
  basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  texts = [_block_text(block) for block in range(len(expected))]
  flat, splits = tok.tokenize_to_ids_batch(texts)
  bad_blocks = []
  compared = blocks_with_reference_unicode()
  assert len(compared) > 4200  # Nearly all: a newer Unicode changes a few dozen.
  for block in compared:
    want = expected[block]
    text, basic_tokens = texts[block], basic.tokenize(texts[block])
    compiled = tok.convert_ids_to_tokens(flat[splits[block]:splits[block + 1]].tolist())
    for path, tokens in (("python", tok.tokenize(text)), ("compiled", compiled)):
      got = hashlib.sha256("\n".join(basic_tokens + ["||"] + tokens).encode(
          "utf-8", "surrogatepass"))
      if got.hexdigest()[:16] != want:
        bad_blocks.append((path, hex(block * 256)))
  assert not bad_blocks, "code point blocks differing: %s" % bad_blocks[:10]


def test_the_tokenizer_reads_the_running_pythons_unicode_tables():
  """As the original's, our tokenizer takes categories and decompositions
  from the interpreter's `unicodedata`: where Unicode 15 (Python 3.12 and
  later) assigned a character that 14 (Python 3.11) left unassigned, the
  tokens follow the running version, on the Python and compiled paths."""
  import unicodedata  # pylint: disable=g-import-not-at-top
  unicode_15 = int(unicodedata.unidata_version.split(".")[0]) >= 15
  danda = "\U00011F43"  # KAWI DANDA: punctuation (Po) since Unicode 15.
  sutuh = "\U0001E4EF"  # NAG MUNDARI SIGN SUTUH: a combining mark (Mn) since 15.
  basic = tokenization.BasicTokenizer(do_lower_case=True)
  assert basic.tokenize("x%sy" % danda) == (["x", danda, "y"] if unicode_15 else
                                             ["x%sy" % danda])
  # Lower-casing strips combining marks, as accents.
  assert basic.tokenize("x%sy" % sutuh) == (["xy"] if unicode_15 else ["x%sy" % sutuh])
  tok = tokenization.FullTokenizer(data_file(VOCABS["uncased"]), True)
  tok.compile_after_characters = 0  # The compiled path from the first text.
  texts = ["x%sy" % danda, "x%sy" % sutuh]
  flat, splits = tok.tokenize_to_ids_batch(texts)
  for i, text in enumerate(texts):
    assert tok.convert_ids_to_tokens(flat[splits[i]:splits[i + 1]].tolist()) == tok.tokenize(text)


@pytest.mark.parametrize("label", [s[0] for s in references.RANDOM_SETTINGS])
def test_random_mixed_texts_match_original(tokenizers, label):
  """Random texts mixing scripts, combining marks, control, private-use and
  space characters, emoji, vocabulary words and over-long words (some with
  lone surrogates; "bytes": UTF-8 with invalid bytes put in), both paths."""
  _, vocab, do_lower_case, seed = [s for s in references.RANDOM_SETTINGS if s[0] == label][0]
  expected = _load("tokenizer_random_mixed.json")[label]
  texts = references.random_setting_texts(label, data_file(VOCABS[vocab]), seed)
  tok = tokenizers(vocab, do_lower_case)
  flat, splits = tok.tokenize_to_ids_batch(texts)
  compiled = [flat[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]
  python = [tok.tokenize_to_ids(t) for t in texts]
  for rows in (compiled, python):
    assert sum(map(len, rows)) == expected["num_ids"]
    got = references.group_digests(rows)
    bad = [k * references.GROUP for k, (g, w) in enumerate(zip(got, expected["groups"]))
           if g != w]
    assert not bad, "groups of texts differing, from text: %s" % bad


def test_the_compiled_path_splits_over_threads_exactly(tokenizers):
  """A batch split over threads gives the one-thread result."""
  tok = tokenizers("uncased", True)
  texts = references.random_setting_texts(
      "uncased_lower", data_file(VOCABS["uncased"]), 7) * 4
  from data_prep import compiled_tokenization  # pylint: disable=g-import-not-at-top
  assert sum(map(len, texts)) > 2 * compiled_tokenization._MIN_PER_THREAD  # pylint: disable=protected-access
  one = tok.tokenize_to_ids_batch(texts)
  two = tok.tokenize_to_ids_batch(texts, num_threads=2)
  np.testing.assert_array_equal(one[0], two[0])
  np.testing.assert_array_equal(one[1], two[1])


def test_real_files_ids_match_original(tokenizers):
  """Whole GLUE/SQuAD/sample files, every vocab and casing, hashed ids."""
  for ref in _load("tokenizer_shared_files.json"):
    with open(shared_path(ref["file"]), encoding="utf-8") as f:
      lines = f.read().split("\n")
    tok = tokenizers(ref["vocab"], ref["do_lower_case"])
    flat, splits = tok.tokenize_to_ids_batch(lines)
    digest = hashlib.sha256()
    for i in range(len(lines)):
      row = flat[splits[i]:splits[i + 1]]
      digest.update((" ".join(map(str, row.tolist())) + "\n").encode())
    assert (len(flat), digest.hexdigest()) == (ref["num_ids"], ref["sha256"]), ref


def _tiny_vocab(tmp_path, tokens):
  path = tmp_path / "vocab.txt"
  path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return str(path)


def test_wordpiece_rules(tmp_path):
  vocab = {t: i for i, t in enumerate(
      ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un",
       "runn", "##ing"])}
  wp = tokenization.WordpieceTokenizer(vocab=vocab)
  assert wp.tokenize("") == []
  assert wp.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
  # One unmatched piece makes the whole word unknown.
  assert wp.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
  short = tokenization.WordpieceTokenizer(vocab=vocab, max_input_chars_per_word=5)
  assert short.tokenize("want wanted") == ["want", "[UNK]"]


def test_basic_rules():
  lower = tokenization.BasicTokenizer(do_lower_case=True)
  cased = tokenization.BasicTokenizer(do_lower_case=False)
  assert lower.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
      "hello", "!", "how", "are", "you", "?"]
  assert lower.tokenize("H\u00E9llo") == ["hello"]
  assert cased.tokenize(" \tHeLLo!how  \n Are yoU? ") == [
      "HeLLo", "!", "how", "Are", "yoU", "?"]
  assert lower.tokenize("ah\u535A\u63A8zz") == ["ah", "\u535A", "\u63A8", "zz"]
  # Control characters vanish without splitting; NUL and U+FFFD too.
  assert cased.tokenize("a\x05b\x00c\uFFFDd") == ["abcd"]
  assert tokenization._is_whitespace("\u00A0") and not tokenization._is_whitespace("-")
  assert tokenization._is_control("\u0005") and not tokenization._is_control("\t")
  assert not tokenization._is_control("\U0001F4A9")
  for char in "-$`.":
    assert tokenization._is_punctuation(char)
  assert not tokenization._is_punctuation("A")


def test_vocab_loading_and_id_conversion(tmp_path):
  path = _tiny_vocab(tmp_path, ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "dup",
                                "##ed", "dup", "un", "runn", "##ing", ","])
  vocab = tokenization.load_vocab(path)
  assert list(vocab)[:3] == ["[UNK]", "[CLS]", "[SEP]"]
  # A repeated token keeps its first key position and its last line number.
  assert list(vocab).index("dup") == 5 and vocab["dup"] == 7
  tok = tokenization.FullTokenizer(path, do_lower_case=True)
  assert tok.tokenize("UNwant\u00E9d,running") == [
      "un", "##want", "##ed", ",", "runn", "##ing"]
  assert tok.convert_tokens_to_ids(["un", "##want", "##ed", ",", "runn", "##ing"]) == [
      8, 4, 6, 11, 9, 10]
  assert tok.convert_ids_to_tokens([8, 4]) == ["un", "##want"]
  flat, splits = tok.tokenize_to_ids_batch(["unwanted", "", "running ,"])
  assert splits.tolist() == [0, 3, 3, 6]
  assert flat.dtype == np.int32 and flat.tolist() == [8, 4, 6, 9, 10, 11]


def test_vocab_with_windows_line_endings(tmp_path):
  path = tmp_path / "v.txt"
  path.write_bytes(b"[UNK]\r\nhello\r\n")
  assert dict(tokenization.load_vocab(str(path))) == {"[UNK]": 0, "hello": 1}


def test_convert_to_unicode():
  assert tokenization.convert_to_unicode(b"caf\xc3\xa9\xff") == "caf\u00e9"
  assert tokenization.convert_to_unicode("x") == "x"
  with pytest.raises(ValueError):
    tokenization.convert_to_unicode(3)


def test_validate_case_matches_checkpoint():
  check = tokenization.validate_case_matches_checkpoint
  check(True, "/x/uncased_L-12_H-768_A-12/bert_model.ckpt")
  check(False, "/x/cased_L-12_H-768_A-12/bert_model.ckpt")
  check(False, "/x/my_model/bert_model.ckpt")
  check(False, None)
  with pytest.raises(ValueError, match="do_lower_case=False"):
    check(False, "/x/uncased_L-12_H-768_A-12/bert_model.ckpt")
  with pytest.raises(ValueError, match="do_lower_case=True"):
    check(True, "gs://b/multi_cased_L-12_H-768_A-12/bert_model.ckpt")


def test_the_originals_unit_test_cases_through_the_compiled_path(tmp_path):
  """The cases of the original's tokenization_test.py (its small vocabulary),
  through tokenize_to_ids_batch, cased and lower-cased; over-long words with
  a lower limit; a vocabulary without [UNK] keeps the Python path."""
  tokens = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn",
            "##ing", ",", "low", "lowest"]
  path = _tiny_vocab(tmp_path, tokens)
  lower = tokenization.FullTokenizer(path, do_lower_case=True)
  cases = {"UNwant\u00E9d,running": ["un", "##want", "##ed", ",", "runn", "##ing"],
           "": [], "unwanted running": ["un", "##want", "##ed", "runn", "##ing"],
           "unwantedX running": ["[UNK]", "runn", "##ing"],
           " \tHeLLo!how  \n Are yoU?  ": ["[UNK]"] * 6,
           "ah\u535A\u63A8zz": ["[UNK]"] * 4, "lowest low": ["lowest", "low"]}
  flat, splits = lower.tokenize_to_ids_batch(list(cases))
  for i, want in enumerate(cases.values()):
    assert lower.convert_ids_to_tokens(flat[splits[i]:splits[i + 1]].tolist()) == want
  cased = tokenization.FullTokenizer(path, do_lower_case=False)
  flat, splits = cased.tokenize_to_ids_batch(["UNwanted,running", "H\u00E9llo want"])
  assert cased.convert_ids_to_tokens(flat.tolist()) == [
      "[UNK]", ",", "runn", "##ing", "[UNK]", "want"]
  lower.wordpiece_tokenizer.max_input_chars_per_word = 5
  flat, _ = lower.tokenize_to_ids_batch(["want wanted"])
  assert lower.convert_ids_to_tokens(flat.tolist()) == ["want", "[UNK]"]
  no_unk = tokenization.FullTokenizer(_tiny_vocab(tmp_path, tokens[1:]), do_lower_case=True)
  assert no_unk.tokenize_to_ids_batch(["want"])[0].tolist() == [2]
  with pytest.raises(KeyError):
    no_unk.tokenize_to_ids_batch(["wantx"])


def test_marks_are_put_in_canonical_order_before_lookup(tmp_path):
  """Decomposition reorders marks by combining class (U+1D165: 216, U+1D16D:
  226, both kept as spacing marks; U+0301 is dropped): a vocabulary token
  spelt in canonical order matches text written in another order."""
  token = "a\U0001D165\U0001D16D"
  path = _tiny_vocab(tmp_path, ["[UNK]", "x", token])
  tok = tokenization.FullTokenizer(path, do_lower_case=True)
  texts = ["A\U0001D16D\U0001D165", "a\U0001D16D\u0301\U0001D165 x", "\u00C1\U0001D165\U0001D16D"]
  want = [[2], [2, 1], [2]]
  assert [tok.tokenize_to_ids(t) for t in texts] == want
  flat, splits = tok.tokenize_to_ids_batch(texts)
  assert [flat[splits[i]:splits[i + 1]].tolist() for i in range(3)] == want


def test_unicode_tables_cache_is_rebuilt_when_unreadable(tmp_path, monkeypatch):
  """The compiled path's tables: an unreadable cache file is rebuilt and
  written again (the file then holds the built tables); the next process
  reads that file instead of building (building is made to fail)."""
  from data_prep import compiled_tokenization  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv("BERT_TF2_CACHE_DIR", str(tmp_path))
  path = compiled_tokenization._tables_cache_path()  # pylint: disable=protected-access
  assert path.startswith(str(tmp_path))
  with open(path, "wb") as f:
    f.write(b"not an npz file")
  monkeypatch.setattr(compiled_tokenization, "_tables", None)
  built = compiled_tokenization.unicode_tables()
  fields = compiled_tokenization._TABLE_FIELDS  # pylint: disable=protected-access
  with np.load(path) as written:
    assert sorted(written.files) == sorted(fields + ("growth",))
    for name in fields:
      np.testing.assert_array_equal(written[name], getattr(built, name))

  def no_building(self):
    raise AssertionError("built the tables instead of reading the cache")
  monkeypatch.setattr(compiled_tokenization.UnicodeTables, "__init__", no_building)
  monkeypatch.setattr(compiled_tokenization, "_tables", None)
  loaded = compiled_tokenization.unicode_tables()
  assert loaded is not built
  for name in fields:
    np.testing.assert_array_equal(getattr(loaded, name), getattr(built, name))
  assert loaded.growth == built.growth == 8


def test_every_glue_and_squad_file_gives_the_same_ids_on_both_paths(tokenizers):
  """Every file of ../shared/data/glue and squad, line by line, uncased and
  lower-cased: the compiled path's ids equal the Python path's (which
  test_real_files_ids_match_original holds to the original's on a subset)."""
  import glob  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  paths = sorted(glob.glob(os.path.join(shared_path("glue"), "*", "*")) +
                 glob.glob(os.path.join(shared_path("squad"), "*.json")))
  assert len(paths) > 30
  tok = tokenizers("uncased", True)
  for path in paths:
    with open(path, encoding="utf-8", errors="ignore") as f:
      lines = f.read().split("\n")
    flat, splits = tok.tokenize_to_ids_batch(lines)
    python_flat, python_splits = tok._tokenize_to_ids_batch_in_python(lines)  # pylint: disable=protected-access
    np.testing.assert_array_equal(splits, python_splits, err_msg=path)
    np.testing.assert_array_equal(flat, python_flat, err_msg=path)


def test_small_work_stays_in_python_until_it_adds_up(monkeypatch):
  """Below compile_after_characters (counted over the tokenizer's life) the
  batch path runs in Python and the compiled code is never loaded; past it,
  the compiled path takes over. Same ids either way."""
  from data_prep import compiled_tokenization  # pylint: disable=g-import-not-at-top
  built = []

  class Counted(compiled_tokenization.CompiledTokenizer):
    def __init__(self, *args, **kwargs):
      built.append(1)
      super().__init__(*args, **kwargs)

  monkeypatch.setattr(compiled_tokenization, "CompiledTokenizer", Counted)
  monkeypatch.setattr(tokenization.FullTokenizer, "compile_after_characters", 100)
  tok = tokenization.FullTokenizer(data_file(VOCABS["uncased"]), do_lower_case=True)
  texts = ["Unaffable runners, 東京 and caf\u00E9s!", "", "the quick brown fox"]
  expected = [tok.tokenize_to_ids(t) for t in texts]
  seen = []
  for _ in range(3):  # 51 characters a batch: 51, 102, 153 in all.
    flat, splits = tok.tokenize_to_ids_batch(texts)
    assert [flat[splits[i]:splits[i + 1]].tolist() for i in range(3)] == expected
    seen.append(len(built))
  assert seen == [0, 1, 1]
