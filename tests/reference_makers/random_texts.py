"""Random texts that mix scripts and odd characters, the same on every
machine (random.Random with an integer seed), for comparing tokenizers with
the original: tests/test_tokenization.py and make_tokenizer_references.py
both make them from here.
"""

import random

# (first, last) code point ranges drawn from, by kind of character.
POOLS = {
    "ascii": [(0x21, 0x7E)],
    "latin": [(0xC0, 0x24F), (0x1E00, 0x1EFF)],
    "greek": [(0x370, 0x3FF), (0x1F00, 0x1FFF), (0x3A3, 0x3A3), (0x3A3, 0x3A3)],
    "cyrillic": [(0x400, 0x52F)],
    "cjk": [(0x4E00, 0x9FFF), (0x3040, 0x30FF), (0x20000, 0x2A6DF)],
    "hangul": [(0xAC00, 0xD7A3), (0x1100, 0x11FF)],
    "marks": [(0x300, 0x36F), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF), (0x591, 0x5C7),
              (0x1D165, 0x1D169), (0x1D16D, 0x1D172), (0x345, 0x345)],
    "control": [(0x0, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0xFEFF, 0xFEFF),
                (0xFFFD, 0xFFFD), (0xE0001, 0xE007F)],
    "private": [(0xE000, 0xF8FF), (0xF0000, 0xF00FF)],
    "space": [(0x20, 0x20), (0xA0, 0xA0), (0x2000, 0x200A), (0x3000, 0x3000),
              (0x2028, 0x2029), (0x9, 0xD), (0x1C, 0x1F), (0x85, 0x85)],
    "emoji": [(0x1F300, 0x1F6FF), (0x1F900, 0x1F9FF), (0x2600, 0x27BF)],
    "special": [(0x130, 0x130), (0x1E9E, 0x1E9E), (0xDF, 0xDF), (0xFB00, 0xFB06),
                (0x2160, 0x2188), (0x24B6, 0x24E9), (0x10400, 0x1044F), (0x2BC, 0x2BC)],
    "surrogate": [(0xD800, 0xDFFF)],
}
# How often each kind is drawn (vocabulary words are drawn as whole words).
WEIGHTS = {"ascii": 30, "latin": 10, "greek": 8, "cyrillic": 6, "cjk": 6, "hangul": 3,
           "marks": 10, "control": 4, "private": 2, "space": 12, "emoji": 3, "special": 5,
           "surrogate": 0.2}


def _char(rng, kind):
  ranges = POOLS[kind]
  first, last = ranges[rng.randrange(len(ranges))]
  return chr(rng.randint(first, last))


def random_texts(seed, count, words=()):
  """`count` texts of 0-80 characters: characters of the kinds above, and
  (when `words` are given) whole vocabulary words, randomly capitalised, so
  that WordPiece has something to match; about one text in 40 has a word of
  200 or 201 letters (the longest the original does not call unknown, and
  one more)."""
  rng = random.Random(seed)
  kinds = sorted(WEIGHTS)
  weights = [WEIGHTS[k] for k in kinds]
  texts = []
  for _ in range(count):
    parts = []
    for _ in range(rng.randint(0, 40)):
      if words and rng.random() < 0.3:
        word = words[rng.randrange(len(words))]
        roll = rng.random()
        parts.append(word.upper() if roll < 0.1 else word.title() if roll < 0.3 else word)
      else:
        parts.append(_char(rng, rng.choices(kinds, weights)[0]))
      if rng.random() < 0.3:
        parts.append(" ")
    if rng.random() < 0.025:
      parts.append(" " + "a" * rng.randint(200, 201) + " ")
    texts.append("".join(parts))
  return texts


def with_invalid_utf8(seed, texts):
  """Each text as UTF-8 bytes with some bytes that are not valid UTF-8 put in
  (stray continuation bytes, cut sequences, 0xFF)."""
  rng = random.Random(seed)
  bad = [b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf"]
  out = []
  for text in texts:
    data = text.encode("utf-8", "surrogatepass")
    for _ in range(rng.randint(1, 3)):
      at = rng.randint(0, len(data))
      data = data[:at] + bad[rng.randrange(len(bad))] + data[at:]
    out.append(data)
  return out
