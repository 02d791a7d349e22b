"""The demo's own pieces: the bundled pair task and the learning report."""

import math
import random

import pytest

import tensorflow as tf

from demo import pairs as demo_pairs
from demo import report as demo_report


def _chapters():
  return [("Book%d %d" % (b, c), ["verse %d %d %d word%d and more words here" % (b, c, v, v)
                                   for v in range(6)])
          for b in range(3) for c in range(1, 4)]


def test_pairs_are_half_shortened_copies_and_half_other_verses():
  pairs = demo_pairs.make_pairs(_chapters(), 200, random.Random(3))
  assert sum(p[0] for p in pairs) == 100
  for label, id_a, id_b, text_a, text_b in pairs:
    assert id_a.rsplit(":", 1)[0] == id_b.rsplit(":", 1)[0]  # Same chapter.
    assert (id_a == id_b) == (label == 1)
    if label:  # B is A with words left out, in order.
      words = iter(text_a.split())
      assert all(any(w == v for v in words) for w in text_b.split())
      assert len(text_b.split()) < len(text_a.split())


def test_write_task_splits_chapters(tmp_path):
  counts = demo_pairs.write_task(str(tmp_path), train=40, dev=10, test=6)
  assert counts == {"train": 40, "dev": 10, "test": 6}
  chapters = {}
  for name in ("train", "dev", "test"):
    with open(tmp_path / (name + ".tsv"), encoding="utf-8") as f:
      rows = [line.rstrip("\n").split("\t") for line in f][1:]
    assert len(rows) == counts[name] and all(len(r) == 5 for r in rows)
    chapters[name] = {r[1].rsplit(":", 1)[0] for r in rows}
  assert not chapters["train"] & chapters["dev"]
  assert not chapters["train"] & chapters["test"]


def test_pairs_from_a_corpus_file_take_its_documents_and_sentences(tmp_path):
  corpus = tmp_path / "corpus.txt"
  documents = [["Document %d says thing number %d in several plain words." % (d, n)
                for n in range(3)] for d in range(60)]
  corpus.write_text("\n".join("\n".join(d) + "\n" for d in documents), encoding="utf-8")
  # Each document is named by the line it starts on (four lines a document).
  assert demo_pairs.read_documents(str(corpus)) == [
      ("corpus.txt:%d" % (1 + 4 * d), sentences) for d, sentences in enumerate(documents)]
  out = tmp_path / "pairs"
  counts = demo_pairs.write_task(str(out), train=30, dev=8, test=4, corpus_file=str(corpus))
  assert counts == {"train": 30, "dev": 8, "test": 4}
  sentences = {s for d in documents for s in d}
  seen = {}
  for name in ("train", "dev", "test"):
    with open(out / (name + ".tsv"), encoding="utf-8") as f:
      rows = [line.rstrip("\n").split("\t") for line in f][1:]
    assert len(rows) == counts[name]
    assert all(r[3] in sentences for r in rows)
    seen[name] = {r[3].split()[1] for r in rows}  # The document's number.
  assert not seen["train"] & (seen["dev"] | seen["test"])


def test_a_corpus_too_small_for_three_splits_is_one_line(tmp_path, capsys):
  corpus = tmp_path / "small.txt"
  corpus.write_text("One sentence.\nTwo sentences.\n\nThree.\nFour.\n", encoding="utf-8")
  with pytest.raises(SystemExit) as exit_info:
    demo_pairs.main(["--output_dir=%s" % (tmp_path / "out"), "--corpus_file=%s" % corpus])
  assert "too few documents" in str(exit_info.value) and str(corpus) in str(exit_info.value)
  assert not (tmp_path / "out" / "train.tsv").exists()


def _record(ids, weights, next_sentence):
  feature = {
      "masked_lm_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
      "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=weights)),
      "next_sentence_labels": tf.train.Feature(
          int64_list=tf.train.Int64List(value=[next_sentence])),
  }
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_pretraining_baselines_count_only_real_masked_positions(tmp_path):
  path = str(tmp_path / "data.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(_record([7, 7, 9, 0], [1, 1, 1, 0], 1))  # The 0 is padding.
    writer.write(_record([9, 5, 0, 0], [1, 1, 0, 0], 0))
    writer.write(_record([7, 7, 7, 7], [1, 1, 1, 1], 0))  # Beyond the eval set.
  token, share, nsp_share = demo_report.pretraining_baselines(path, 2)
  # Masked ids of the first two records: 7, 7, 9, 9, 5 -> 7 first of the
  # two commonest (2 of 5); next-sentence labels 1, 0 -> 1/2.
  assert token in (7, 9) and share == 2 / 5
  assert nsp_share == 0.5


def test_majority_share_and_loss_curve(tmp_path):
  (tmp_path / "dev.tsv").write_text(
      "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
      "1\ta\tb\tx\ty\n0\ta\tb\tx\ty\n1\ta\tb\tx\ty\n1\ta\tb\tx\ty\n", encoding="utf-8")
  assert demo_report.majority_share(str(tmp_path)) == ("1", 0.75)

  writer = tf.summary.create_file_writer(str(tmp_path / "train"))
  with writer.as_default():
    for step, loss in ((100, 6.5), (200, 5.25), (300, 4.0)):
      tf.summary.scalar("loss", loss, step=step)
      tf.summary.scalar("learning_rate", 1e-3, step=step)
  writer.close()
  png = tmp_path / "loss.png"
  points = demo_report.loss_curve(str(tmp_path / "train"), str(png))
  assert points == [(100, 6.5), (200, 5.25), (300, 4.0)]
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fine_tuning_that_ends_at_the_label_entropy_is_stuck(tmp_path):
  (tmp_path / "train.tsv").write_text(
      "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
      "1\ta\tb\tx\ty\n0\ta\tb\tx\ty\n1\ta\tb\tx\ty\n1\ta\tb\tx\ty\n", encoding="utf-8")
  entropy = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))  # 0.5623
  assert demo_report.label_entropy("MRPC", str(tmp_path)) == pytest.approx(entropy)
  for name, last, stuck in (("stuck", 0.56, True), ("learning", 0.5, False)):
    with tf.summary.create_file_writer(str(tmp_path / name / "train")).as_default():
      for step, loss in ((50, 0.2), (100, last)):  # The last step counts.
        tf.summary.scalar("loss", loss, step=step)
    assert demo_report.fine_tuning_stuck("MRPC", str(tmp_path), str(tmp_path / name)) == (
        pytest.approx(last), pytest.approx(entropy), stuck)
  assert demo_report.fine_tuning_stuck("MRPC", str(tmp_path), str(tmp_path / "none")) == (
      None, None, False)


def test_check_fine_tuning_exits_3_when_the_demo_learned_nothing(tmp_path, capsys):
  pairs = tmp_path / "pairs"
  pairs.mkdir()
  (pairs / "train.tsv").write_text(
      "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\ta\tb\tx\ty\n0\ta\tb\tx\ty\n",
      encoding="utf-8")  # Entropy ln 2 = 0.693.
  for loss, status in ((0.69, 3), (0.5, 0)):
    summaries = tmp_path / "classifier_output" / "train"
    if summaries.exists():
      for f in summaries.iterdir():
        f.unlink()
    with tf.summary.create_file_writer(str(summaries)).as_default():
      tf.summary.scalar("loss", loss, step=100)
    assert demo_report.check_fine_tuning(str(tmp_path)) == status
  assert "training loss 0.690, the labels' entropy 0.693" in capsys.readouterr().out
