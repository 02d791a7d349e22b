"""Which split raw text gets (tasks/ner/word_split.py): Treebank's for
training words that hold punctuation beside letters or digits (CoNLL-2003),
the basic split for data whose every punctuation mark is a word (Chinese of
a character a line, text BasicTokenizer split); the flag over the run's
record over the training words over the default, and what gets recorded."""

import re

import pytest

from conftest import shared_path
from plumbing.errors import UserError
from tasks.ner import conll
from tasks.ner import word_split


def _sentences(*texts):
  return [conll.Sentence(text.split(" "), ["O"] * len(text.split(" ")), "hand")
          for text in texts]


CONLL_LIKE = _sentences("U.S. officials said on Tuesday .", "It 's up 3,000 points .",
                        "Chester-le-Street : Glamorgan 259")
# Chinese NER data of a character a line: its punctuation marks (and each
# digit) are words of their own.
CHARACTERS = _sentences("我 在 北 京 ， 2 0 0 8 年 。", "「 东 京 」 ： 日 本 的 首 都 ！")
BASIC_SPLIT = _sentences("John Smith went to Paris ( France ) .", "U . S . officials , 3 , 000")


@pytest.fixture
def logged(monkeypatch):
  lines = []
  monkeypatch.setattr(word_split.logging, "info", lambda fmt, *args: lines.append(fmt % args))
  return lines


def test_detects_treebank_words_from_punctuation_beside_letters():
  split, why = word_split.detect(CONLL_LIKE)
  assert split == "treebank"
  # U.S., 's, 3,000, Chester-le-Street of 16 words.
  assert why.startswith("4 of the 16 training words hold punctuation beside letters or digits")
  for sentences in (CHARACTERS, BASIC_SPLIT):
    split, why = word_split.detect(sentences)
    assert split == "basic" and why.startswith("0 of the "), why


def test_detects_treebank_words_in_conll_2003():
  sentences = conll.read_sentences(shared_path("conll2003/train.txt"))
  words = [w for s in sentences for w in s.words]
  # Counted here with ASCII's classes: the file is ASCII.
  joined = [w for w in words if re.search("[A-Za-z0-9]", w) and re.search("[!-/:-@\\[-`{-~]", w)]
  assert all(w.isascii() for w in words) and len(joined) > 0.01 * len(words)
  split, why = word_split.detect(sentences)
  assert split == "treebank"
  assert why.startswith("%d of the %d training words" % (len(joined), len(words))), why
  assert "('s, U.S., 1996-08-28)" in why


def test_a_few_joined_words_in_much_data_keep_the_basic_split():
  many = BASIC_SPLIT * 1000 + _sentences("see www.example.com")  # 1 in 18,002.
  split, why = word_split.detect(many)
  assert split == "basic" and why.startswith("1 of the 18002 training words"), why


def test_the_flag_then_the_record_then_the_training_words(tmp_path, logged):
  record = tmp_path / word_split.RECORD_FILE
  # A new training run: decided from its words, and recorded.
  assert word_split.choose(str(tmp_path), None, lambda: CONLL_LIKE, training=True) == "treebank"
  assert record.read_text() == "treebank\n"
  assert logged[-1].startswith("Raw text is cut into words by the treebank split (4 of the 16")
  # Later runs keep the record, whatever their training words.
  assert word_split.choose(str(tmp_path), None, lambda: CHARACTERS, training=True) == "treebank"
  assert word_split.choose(str(tmp_path)) == "treebank"
  assert "recorded in %s" % record in logged[-1]
  # The flag chooses; a run that does not train keeps its record.
  assert word_split.choose(str(tmp_path), "basic") == "basic"
  assert record.read_text() == "treebank\n"
  assert logged[-1] == ("Raw text is cut into words by the basic split (--raw_text_words; the "
                        "run's record says treebank).")
  # A run that trains records the flag's choice.
  assert word_split.choose(str(tmp_path), "basic", lambda: CONLL_LIKE, training=True) == "basic"
  assert record.read_text() == "basic\n"


def test_a_run_from_before_the_record(tmp_path, logged):
  record = tmp_path / word_split.RECORD_FILE
  # Its training file at hand: decided from it, and recorded.
  assert word_split.choose(str(tmp_path), None, lambda: CHARACTERS) == "basic"
  assert record.read_text() == "basic\n"
  record.unlink()
  # None: Treebank's, said, and nothing recorded.
  assert word_split.choose(str(tmp_path)) == "treebank"
  assert not record.exists()
  assert "records no split (a run from before the record)" in logged[-1]
  # A flag with no record: recorded.
  assert word_split.choose(str(tmp_path), "basic") == "basic"
  assert record.read_text() == "basic\n"


def test_a_record_of_no_known_split_is_one_line(tmp_path):
  (tmp_path / word_split.RECORD_FILE).write_text("spaces\n")
  with pytest.raises(UserError, match="raw_text_words.txt holds 'spaces'; expected one of "
                     "treebank, basic"):
    word_split.choose(str(tmp_path))
