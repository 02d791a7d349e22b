"""Raw text to words and entities (serving/words/basic.py,
tasks/ner/raw_text.py, the NER export's windows and entities): words where
the original's BasicTokenizer puts them, offsets into the text as sent, the
TensorFlow split and windows the same as the Python ones in both splits,
entities that never begin or end with a word of punctuation alone, read
the same way by both. The Treebank split: test_treebank_words.py."""

import random

import pytest
import tensorflow as tf

from conftest import data_file
from data_prep import tokenization
from plumbing.errors import UserError
from serving import tagger
from serving import tokenizer as graph_tokenizer
from serving.words import basic as words
from serving.words import treebank
from tasks.ner import features
from tasks.ner import raw_text

UNCASED = data_file("vocab/bert_uncased_vocab.txt")

# The issue's sentences, split by hand: (word, start, end).
HAND = {
    "John Smith flew to Paris.": [
        ("John", 0, 4), ("Smith", 5, 10), ("flew", 11, 15), ("to", 16, 18), ("Paris", 19, 24),
        (".", 24, 25)],
    "Angela Merkel met Emmanuel Macron in Berlin, Germany.": [
        ("Angela", 0, 6), ("Merkel", 7, 13), ("met", 14, 17), ("Emmanuel", 18, 26),
        ("Macron", 27, 33), ("in", 34, 36), ("Berlin", 37, 43), (",", 43, 44),
        ("Germany", 45, 52), (".", 52, 53)],
    "Apple's CEO Tim Cook visited Microsoft.": [
        ("Apple", 0, 5), ("'", 5, 6), ("s", 6, 7), ("CEO", 8, 11), ("Tim", 12, 15),
        ("Cook", 16, 20), ("visited", 21, 28), ("Microsoft", 29, 38), (".", 38, 39)],
    "The U.S. Open is played in New York (USA).": [
        ("The", 0, 3), ("U", 4, 5), (".", 5, 6), ("S", 6, 7), (".", 7, 8), ("Open", 9, 13),
        ("is", 14, 16), ("played", 17, 23), ("in", 24, 26), ("New", 27, 30), ("York", 31, 35),
        ("(", 36, 37), ("USA", 37, 40), (")", 40, 41), (".", 41, 42)],
    # Repeated spaces, tabs and newlines; accents and emoji inside words; CJK
    # ideographs and their punctuation apart; a zero-width space inside a word
    # (deleted by the original's cleaning: the word keeps it in its span).
    "  Zoë\t\tflew  to\n\nMünchen 😀!": [
        ("Zoë", 2, 5), ("flew", 7, 11), ("to", 13, 15), ("München", 17, 24), ("😀", 25, 26),
        ("!", 26, 27)],
    "我在北京。Tokyo、東京": [
        ("我", 0, 1), ("在", 1, 2), ("北", 2, 3), ("京", 3, 4), ("。", 4, 5), ("Tokyo", 5, 10),
        ("、", 10, 11), ("東", 11, 12), ("京", 12, 13)],
    "Pa\u200bris\u200b, \u200bFrance": [
        ("Pa\u200bris", 0, 6), (",", 7, 8), ("France", 10, 16)],
    "": [],
    " \n\t ": [],
}

# Texts of every kind of character the split knows, for the references.
UNICODE = [
    "naïve café, São Paulo — «quoted» ‘words’ and “more”…",
    "Ελλάδα: Αθήνα; Россия: Москва! العربية، مرحبا؟ עברית. हिन्दी। ไทย ๆ 한국어 서울",
    "Ｆｕｌｌｗｉｄｔｈ！（ｐａｒｅｎｓ）　and an ideographic space, 「引用」 〈括弧〉",
    "math $5+3=8^2 | a~b `tick` @user #tag 100% {x} [y] <z> a_b a-b a/b a\\b",
    "soft\u00adhyphen zero\u200dwidth\u200bjoin bom\ufeffin nul\x00in bell\x07in \ufffd",
    "line\u2028sep para\u2029sep nbsp\u00a0here thin\u2009space next\x85line \x1cfs",
    "emoji 👩‍👩‍👧 flags 🇫🇷 skin 👍🏽 keycap 1️⃣ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠀀𪜀 compat豈",
    "e\u0301 combining ́ marks \u0300x, Hangul 가\u11a8 tone\u302e mark",
    "U.S.A. 1,000.50 e-mail o'clock rock'n'roll ... !!! ?! --",
]


def _long_text():
  """About 3,000 characters: a document longer than many windows."""
  rng = random.Random(3000)
  sentences = [sentence for sentence in HAND if sentence.strip()] + UNICODE
  out = ""
  while len(out) < 3000:
    out += rng.choice(sentences) + rng.choice([" ", "  ", "\n", "\n\n", "\t"])
  return out


def _random_texts(count=60, seed=7):
  """Random code points from all of Unicode (no surrogates), with spaces."""
  rng = random.Random(seed)
  texts = []
  for _ in range(count):
    chars = []
    for _ in range(rng.randint(0, 40)):
      roll = rng.random()
      if roll < 0.2:
        chars.append(rng.choice(" \t\n\u3000\u00a0"))
      elif roll < 0.5:
        chars.append(chr(rng.randrange(32, 127)))
      else:
        cp = rng.randrange(0x110000)
        chars.append(chr(cp if not 0xD800 <= cp <= 0xDFFF else 0x41))
    texts.append("".join(chars))
  return texts


def _dropped(char):
  """What the original's cleaning deletes."""
  return char in "\x00\ufffd" or tokenization.is_control(char)


def _reference_spans(text):
  """The original BasicTokenizer's words (no lower-casing), placed in the
  text: each starts at its first character's next occurrence, and spans the
  text until its last, over the characters cleaning deleted. Between words
  there is only whitespace or deleted characters."""
  spans, position = [], 0
  for token in tokenization.BasicTokenizer(do_lower_case=False).tokenize(text):
    start = text.index(token[0], position)
    assert all(c.isspace() or _dropped(c) for c in text[position:start]), (text, token)
    end, matched = start, 0
    while matched < len(token):
      if text[end] == token[matched]:
        matched += 1
      else:
        assert _dropped(text[end]), (text, token)
      end += 1
    spans.append((start, end))
    position = end
  assert all(c.isspace() or _dropped(c) for c in text[position:]), text
  return spans


def _graph_words(texts):
  """words_of on `texts`: per text, [(word, start, end)]."""
  found, start, end = tf.function(words.words_of)(tf.constant(
      [t.encode("utf-8") for t in texts], tf.string))
  return [[(w.decode("utf-8"), s, e) for w, s, e in zip(row_words, row_start, row_end)]
          for row_words, row_start, row_end in zip(found.to_list(), start.to_list(),
                                                   end.to_list())]


def test_the_issues_sentences_split_as_written_by_hand():
  for text, expected in HAND.items():
    assert [(text[s:e], s, e) for s, e in words.word_spans(text)] == expected, text


@pytest.mark.parametrize("name", ["hand", "unicode", "long", "random"])
def test_words_are_the_original_basic_tokenizers_at_their_offsets(name):
  texts = {"hand": list(HAND), "unicode": UNICODE, "long": [_long_text()],
           "random": _random_texts()}[name]
  for text in texts:
    assert words.word_spans(text) == _reference_spans(text), text


def test_tensorflow_split_is_the_python_one_word_for_word():
  long_text = _long_text()
  assert len(long_text) >= 3000
  texts = list(HAND) + UNICODE + [long_text] + _random_texts(seed=11)
  expected = [[(text[s:e], s, e) for s, e in words.word_spans(text)] for text in texts]
  assert _graph_words(texts) == expected
  assert _graph_words([]) == []
  assert _graph_words(["", "a"]) == [[], [("a", 0, 1)]]


def test_invalid_utf8_is_replaced_and_ends_no_word():
  """The export reads invalid bytes as U+FFFD, which cleaning deletes."""
  found, start, end = tf.function(words.words_of)(tf.constant([b"ab\xffcd e\xc3", b"\xff x"]))
  assert found.to_list() == [[b"ab\xef\xbf\xbdcd", b"e"], [b"x"]]
  assert start.to_list() == [[0, 6], [2]] and end.to_list() == [[5, 7], [3]]


@pytest.fixture(scope="module")
def tokenizers():
  return (tokenization.FullTokenizer(UNCASED, do_lower_case=True),
          graph_tokenizer.GraphTokenizer(UNCASED, do_lower_case=True))


@pytest.mark.parametrize("split", ["basic", "treebank"])
def test_export_windows_are_the_tasks(tokenizers, split):
  """The export's windows of raw text (its `tokenize` signature) hold the
  pieces the task's windows of the same words hold, and label the same
  word at the same position: a 3,000-character text crosses many."""
  python_tokenizer, tf_tokenizer = tokenizers
  texts = [_long_text()] + list(HAND) + UNICODE
  sentences, _ = raw_text.sentences_of(texts, "texts.txt", split)
  settings = [(16, 5), (40, 16)]  # (max_seq_length, doc_stride)
  both = tf.function(lambda t: [tagger.windows(tf_tokenizer, t, length, stride, split)[0]
                                for length, stride in settings])(tf.constant(texts))
  for (max_seq_length, doc_stride), out in zip(settings, both):
    expected = features.windows_of_sentences(sentences, python_tokenizer, max_seq_length,
                                             doc_stride)
    assert sum(w.sentence == 0 for w in expected) > 20
    assert out["example"].numpy().tolist() == [w.sentence for w in expected]
    for window, ids, mask, word in zip(expected, out["input_ids"].numpy(),
                                       out["input_mask"].numpy(), out["word"].numpy()):
      length = len(window.input_ids)
      assert ids[:length].tolist() == window.input_ids and not ids[length:].any()
      assert mask.tolist() == [1] * length + [0] * (max_seq_length - length)
      labelled = dict(zip(window.positions, window.words))
      assert word.tolist() == [labelled.get(p, -1) for p in range(max_seq_length)]


LABELS = ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]


def _predictions(tags, probabilities):
  return [(LABELS.index(t), p) for t, p in zip(tags, probabilities)]


def test_entities_of_tagged_words():
  text = "Angela Merkel met Emmanuel Macron in Berlin, Germany."
  spans = words.word_spans(text)
  tags = ["B-PER", "I-PER", "O", "I-PER", "I-PER", "O", "B-LOC", "O", "B-LOC", "O"]
  probabilities = [0.9, 0.7, 0.99, 0.6, 0.8, 0.9, 0.95, 0.9, 0.85, 0.9]
  assert raw_text.entities_of(text, spans, _predictions(tags, probabilities), LABELS) == [
      {"type": "PER", "start": 0, "end": 13, "text": "Angela Merkel", "score": pytest.approx(0.8)},
      {"type": "PER", "start": 18, "end": 33, "text": "Emmanuel Macron",
       "score": pytest.approx(0.7)},
      {"type": "LOC", "start": 37, "end": 43, "text": "Berlin", "score": 0.95},
      {"type": "LOC", "start": 45, "end": 52, "text": "Germany", "score": 0.85}]
  # A B- after the same type, a switch of type inside, one at the text's end;
  # the words of punctuation alone at an entity's ends are not part of it.
  text = "The U.S. Open (USA)"
  spans = words.word_spans(text)
  assert [text[s:e] for s, e in spans] == ["The", "U", ".", "S", ".", "Open", "(", "USA", ")"]
  tags = ["B-ORG", "B-ORG", "I-ORG", "I-ORG", "I-LOC", "I-LOC", "O", "B-LOC", "I-LOC"]
  probabilities = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
  found = raw_text.entities_of(text, spans, _predictions(tags, probabilities), LABELS)
  assert [(e["type"], e["start"], e["end"], e["text"]) for e in found] == [
      ("ORG", 0, 3, "The"), ("ORG", 4, 7, "U.S"), ("LOC", 9, 13, "Open"),
      ("LOC", 15, 18, "USA")]
  assert [e["score"] for e in found] == pytest.approx([0.9, 0.7, 0.4, 0.2])
  # An entity of punctuation alone is none; punctuation inside one stays.
  text = "($) Chester-le-Street."
  spans = words.word_spans(text)
  tags = ["B-ORG", "I-ORG", "I-ORG"] + ["B-LOC"] + ["I-LOC"] * 5
  found = raw_text.entities_of(text, spans, _predictions(tags, [1.0] * 9), LABELS)
  assert [(e["type"], e["start"], e["end"], e["text"]) for e in found] == [
      ("LOC", 4, 21, "Chester-le-Street")]


def _graph_entities(texts, split, tags, probabilities):
  """tagger.read_entities on the texts' words in `split`, tagged `tags`
  with `probabilities` (per text): per text, [(type, start, end, text, score)]."""
  def read(batch, label, score):
    found, start, end = words.words_of(batch) if split == "basic" else treebank.words_of(batch)
    return tagger.read_entities(LABELS, found, start.with_flat_values(label),
                                start.with_flat_values(score), start, end, batch)
  out = tf.function(read)(tf.constant(texts), tf.constant(
      [LABELS.index(t) for row in tags for t in row], tf.int32), tf.constant(
          [p for row in probabilities for p in row], tf.float32))
  out = {k: v.numpy().tolist() for k, v in out.items()}
  return [[(out["entity_type"][i][k].decode(), out["entity_start"][i][k],
            out["entity_end"][i][k], out["entity_text"][i][k].decode("utf-8"),
            out["entity_score"][i][k]) for k in range(out["num_entities"][i])]
          for i in range(len(texts))]


@pytest.mark.parametrize("split", ["basic", "treebank"])
def test_export_reads_entities_as_python_does(split):
  """The export's entities (TensorFlow ops) are raw_text.entities_of's for
  the same words and tags: seeded random tags over texts full of
  punctuation, Unicode and empty texts."""
  rng = random.Random(61)
  texts = list(HAND) + UNICODE + ["($) Chester-le-Street.", "A. Dale 69, H. Morris (U.S.)."]
  module = words if split == "basic" else treebank
  spans = [module.word_spans(text) for text in texts]
  tags = [[rng.choice(LABELS) for _ in row] for row in spans]
  probabilities = [[round(rng.random(), 3) for _ in row] for row in spans]
  expected = [[(e["type"], e["start"], e["end"], e["text"], pytest.approx(e["score"], abs=1e-6))
               for e in raw_text.entities_of(text, row, _predictions(t, p), LABELS)]
              for text, row, t, p in zip(texts, spans, tags, probabilities)]
  assert _graph_entities(texts, split, tags, probabilities) == expected
  assert sum(len(row) for row in expected) > 40
  for text, row, text_spans in zip(texts, expected, spans):
    for _, start, end, _, _ in row:  # Its first and last words: not punctuation alone.
      first = next(text[s:e] for s, e in text_spans if s == start)
      last = next(text[s:e] for s, e in text_spans if e == end)
      assert not any(all(tokenization.is_punctuation(c)
                         for c in word) for word in (first, last)), (text, first, last)


def test_lines_as_read(tmp_path):
  path = tmp_path / "texts.txt"
  path.write_bytes("\ufeffJohn  Smith\r\n\r\n\n  Paris.\u2028Berlin\nlast".encode("utf-8"))
  assert raw_text.read_lines(str(path)) == ["John  Smith", "", "", "  Paris.\u2028Berlin", "last"]
  path.write_bytes(b"ok\n\n")
  assert raw_text.read_lines(str(path)) == ["ok", ""]
  path.write_bytes(b"")
  assert raw_text.read_lines(str(path)) == []
  path.write_bytes(b"fine\nbad \xe9t\xe9\n")
  with pytest.raises(UserError, match=r"texts.txt:2: not UTF-8 \(byte 5 of the line"):
    raw_text.read_lines(str(path))
