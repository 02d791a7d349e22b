"""Reading text exactly as the original's tf.gfile.GFile.readline() did."""

import os

import pytest
import tensorflow as tf

from demo import corpus as demo_corpus
from plumbing import text_io

TRICKY = (b"plain line\n"
          b"windows line\r\n"
          b"mid\rcarriage\r\r return\n"
          b"unicode\xe2\x80\xa8line separator\xc2\x85 next-line\x1cfs\n"
          b"\n"
          b"\xe3\x80\x80\n"
          b"no final newline")


def _gfile_lines(path):
  lines = []
  with tf.io.gfile.GFile(path, "r") as f:
    while True:
      line = f.readline()
      if not line:
        return lines
      lines.append(line.rstrip("\n"))


def test_lines_match_gfile_readline(tmp_path):
  path = str(tmp_path / "tricky.txt")
  with open(path, "wb") as f:
    f.write(TRICKY)
  ours = [line for _, line in text_io.iter_text_lines(path)]
  assert ours == _gfile_lines(path)
  assert ours[2] == "midcarriage return"


def test_small_chunks_do_not_change_lines(tmp_path, monkeypatch):
  path = str(tmp_path / "tricky.txt")
  with open(path, "wb") as f:
    f.write(TRICKY * 3)
  monkeypatch.setattr(text_io, "_CHUNK_BYTES", 7)
  assert [l for _, l in text_io.iter_text_lines(path)] == _gfile_lines(path)


def test_invalid_utf8_names_file_and_line(tmp_path):
  path = str(tmp_path / "bad.txt")
  with open(path, "wb") as f:
    f.write(b"ok\nstill ok\nbad \xff here\n")
  with pytest.raises(text_io.InvalidUtf8Error, match=r"bad.txt:3: invalid UTF-8 at byte 4"):
    list(text_io.iter_text_lines(path))
  assert [l for _, l in text_io.iter_text_lines(path, errors="ignore")][2] == "bad  here"


def test_globs_follow_tensorflow_order_and_reject_no_match(tmp_path):
  for name in ("b.txt", "a.txt", "c10.txt", "c2.txt", "x.dat"):
    (tmp_path / name).write_text("x")
  pattern = str(tmp_path / "*.txt")
  assert text_io.expand_globs(pattern + "," + str(tmp_path / "x.dat")) == (
      tf.io.gfile.glob(pattern) + [str(tmp_path / "x.dat")])
  with pytest.raises(FileNotFoundError, match="nothing"):
    text_io.expand_globs(str(tmp_path / "nothing*"))


def test_demo_corpus_format(tmp_path):
  assert demo_corpus.split_sentences(
      'He said, "Go." And they went. Why? Because! Mr. X stayed') == [
          'He said, "Go."', "And they went.", "Why?", "Because!", "Mr. X stayed"]
  path = str(tmp_path / "kjv.txt")
  assert demo_corpus.write_kjv_corpus(path, max_chapters=3) == 3
  with open(path, encoding="utf-8") as f:
    documents = f.read().split("\n\n")
  assert len(documents) == 3
  assert documents[0].startswith("In the beginning God created the heaven and the earth.\n")
  assert all(line.strip() for doc in documents for line in doc.strip("\n").split("\n"))
  assert os.listdir(str(tmp_path)) == ["kjv.txt"]  # No temporary file left.
