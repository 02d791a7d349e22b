"""The bulk path of FullTokenizer, compiled: many texts to WordPiece ids at once.

Every step of the Python tokenizer (data_prep/tokenization.py) is done here
over arrays of code points, with the character properties it asks Python
for read from tables that are built from this Python's own `unicodedata` and
`str` methods when the first tokenizer is made, so the two agree for every
code point by construction:

  clean       NUL, U+FFFD and control characters (Cc, Cf; not tab, newline,
              carriage return) dropped; whitespace (Zs and those three) -> space;
  CJK         each ideograph a word of its own;
  split       on what `str.split()` splits on (`str.isspace`);
  lower-case  `str.lower`'s full mappings (one character may become several)
              and its final-sigma rule, which looks at the cased and
              case-ignorable characters around a capital sigma in the word;
  accents     canonical decomposition (NFD: per-character decompositions, then
              marks reordered by combining class), then nonspacing marks (Mn)
              dropped;
  punctuation each punctuation character a piece of its own;
  WordPiece   greedy longest match, walking two tries (word starts, and "##"
              continuations) built from the vocabulary as `load_vocab` reads it
              (a repeated token keeps its last line's id); a piece longer than
              `max_input_chars_per_word`, or one that cannot be covered, is
              [UNK].

The kernel runs without the GIL, so `tokenize_to_ids_batch(..., num_threads)`
splits a large batch over threads. `basic_tokens_text` stops before
WordPiece and gives the basic tokens themselves (what vocab/learn_vocab.py
counts).
"""

import concurrent.futures
import hashlib
import os
import sys
import unicodedata

import numba
import numpy as np

from plumbing import files

_NUM_CODE_POINTS = 0x110000

# Bits of the per-code-point flags table.
_DROP = 1         # removed by cleaning
_SPACE = 2        # becomes a space when cleaning
_CJK = 4          # an ideograph: a word of its own
_SPLIT = 8        # str.split() splits here
_PUNCT = 16       # a piece of its own
_MARK = 32        # Mn: dropped after decomposition
_CASED = 64       # cased, and not case-ignorable (the final-sigma rule)
_IGNORABLE = 128  # case-ignorable (the final-sigma rule)

_CAPITAL_SIGMA = 0x3A3
# The CJK Unified Ideograph blocks (tokenization.is_chinese_char).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _kernel(**options):
  """numba.njit without reference counting: the kernel allocates nothing, and
  counting references to the arrays passed to each helper call slows it."""
  return numba.njit(_nrt=False, **options)


class UnicodeTables(object):
  """The character properties the kernel needs, for every code point.

  Unassigned, private-use and surrogate code points (most of the range) have
  none of them: the slow `str` and `unicodedata` calls are made for the
  others only."""

  def __init__(self):
    category_of = unicodedata.category
    categories = [category_of(chr(c)) for c in range(_NUM_CODE_POINTS)]
    names = sorted(set(categories))
    number = {name: k for k, name in enumerate(names)}
    category = np.array([number[c] for c in categories], np.uint8)
    del categories
    active = np.flatnonzero(~np.isin(category, [number[n] for n in ("Cn", "Co", "Cs") if n in number]))
    chars = [chr(c) for c in active]

    def in_categories(*wanted):
      return np.isin(category, [number[n] for n in names if n in wanted or n[0] in wanted])

    # The Python tokenizer's predicates (data_prep/tokenization.py), per category.
    cps = np.arange(_NUM_CODE_POINTS)
    tab_newline_return = np.isin(cps, [9, 10, 13])
    control = in_categories("Cc", "Cf") & ~tab_newline_return
    whitespace = (cps == 32) | tab_newline_return | in_categories("Zs")
    ascii_punctuation = (((33 <= cps) & (cps <= 47)) | ((58 <= cps) & (cps <= 64)) |
                         ((91 <= cps) & (cps <= 96)) | ((123 <= cps) & (cps <= 126)))
    cjk = np.zeros(_NUM_CODE_POINTS, bool)
    for lo, hi in _CJK_RANGES:
      cjk[lo:hi + 1] = True
    flags = np.zeros(_NUM_CODE_POINTS, np.uint8)
    flags[(cps == 0) | (cps == 0xFFFD) | control] |= _DROP
    flags[whitespace & ~control] |= _SPACE
    flags[cjk] |= _CJK
    flags[active[np.fromiter((c.isspace() for c in chars), bool, len(chars))]] |= _SPLIT
    flags[ascii_punctuation | in_categories("P")] |= _PUNCT
    flags[in_categories("Mn")] |= _MARK
    flags[active] |= _sigma_context_flags(chars)
    self.flags = flags
    self.lower_index, self.lower_offsets, self.lower_data = _mappings(
        active, chars, [c.lower() for c in chars])
    # The capital sigma's context decides between its two lower-case forms.
    self.lower_index[_CAPITAL_SIGMA] = 0x3C3
    self.nfd_index, self.nfd_offsets, self.nfd_data = _mappings(
        active, chars, [unicodedata.normalize("NFD", c) for c in chars])
    # How many code points one can become when lower-cased, then decomposed.
    self.growth = int(max(1, np.diff(self.lower_offsets).max(initial=1)) *
                      max(1, np.diff(self.nfd_offsets).max(initial=1)))
    self.combining_class = np.zeros(_NUM_CODE_POINTS, np.uint8)
    self.combining_class[active] = np.fromiter(
        (unicodedata.combining(c) for c in chars), np.uint8, len(chars))


def _sigma_context_flags(chars):
  """_CASED and _IGNORABLE, read off `str.lower` itself: a capital sigma after
  character c (alone) is final iff c is cased and not case-ignorable; after
  "A" and c, iff c is case-ignorable or cased."""
  # One lower() call over all probes, separated by NUL, which is neither
  # cased nor case-ignorable (and so stands in for itself: U+0001 is alike).
  probed = ["\1" if c == "\0" else c for c in chars]

  def final_after(prefix):
    lowered = "\0".join(prefix + c + "\u03a3" for c in probed).lower().split("\0")
    return np.array([s[-1] == "\u03c2" for s in lowered])
  alone, after_a = final_after(""), final_after("A")
  flags = np.zeros(len(chars), np.uint8)
  flags[alone] |= _CASED
  flags[after_a & ~alone] |= _IGNORABLE
  return flags


def _mappings(cps, chars, mapped):
  """(index, offsets, data) over all code points: index[c] is the single code
  point c maps to, or -(k + 1) for a mapping of several,
  data[offsets[k]:offsets[k + 1]]. Code points outside `cps` map to themselves."""
  index = np.arange(_NUM_CODE_POINTS, dtype=np.int32)
  offsets, data = [0], []
  for cp, char, result in zip(cps.tolist(), chars, mapped):
    if result == char:
      continue
    if len(result) == 1:
      index[cp] = ord(result)
    else:
      index[cp] = -len(offsets)
      data.extend(ord(r) for r in result)
      offsets.append(len(data))
  return index, np.array(offsets, np.int32), np.array(data, np.int32)


_tables = None
_TABLE_FIELDS = ("flags", "lower_index", "lower_offsets", "lower_data", "nfd_index",
                 "nfd_offsets", "nfd_data", "combining_class")


def unicode_tables():
  """Once per process: read from the cache directory, or built and saved
  there. The cache file's name holds the Python version, its Unicode
  version and a digest of this file, so a change to any of them rebuilds."""
  global _tables
  if _tables is None:
    path = _tables_cache_path()
    try:
      with np.load(path) as saved:
        tables = UnicodeTables.__new__(UnicodeTables)
        for name in _TABLE_FIELDS:
          setattr(tables, name, saved[name])
        tables.growth = int(saved["growth"])
    except Exception:  # pylint: disable=broad-except
      tables = UnicodeTables()  # Absent or unreadable: build, then try to save.
      try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = "%s.tmp-%d" % (path, os.getpid())
        with open(temporary, "wb") as f:
          np.savez(f, growth=tables.growth, **{n: getattr(tables, n) for n in _TABLE_FIELDS})
        os.replace(temporary, path)
      except OSError:
        pass  # A read-only home: build in every process.
    _tables = tables
  return _tables


def _tables_cache_path():
  with open(__file__, "rb") as f:
    digest = hashlib.sha1(f.read()).hexdigest()[:12]
  return files.cache_directory("unicode-tables-py%d.%d-unicode%s-%s.npz" % (
      sys.version_info[0], sys.version_info[1], unicodedata.unidata_version, digest))


class Trie(object):
  """The vocabulary as two tries: root 0 holds every token, root 1 the tokens
  after a "##" prefix; built with a hash table of edges, then laid out as a
  double array for the kernel (`arrays`)."""

  def __init__(self, vocab):
    tokens = list(vocab.items())  # Each token once, with its last line's id.
    words = [t for t, _ in tokens] + [t[2:] for t, _ in tokens if t.startswith("##") and len(t) > 2]
    ids = np.array([i for _, i in tokens] +
                   [i for t, i in tokens if t.startswith("##") and len(t) > 2], np.int32)
    roots = [0] * len(tokens) + [1] * (len(words) - len(tokens))
    lengths = np.fromiter((len(w) for w in words), np.int64, len(words))
    flat = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"),
                         np.uint32).astype(np.int32)
    offsets = np.zeros(len(words) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    edges = int(lengths.sum())
    bits = max(4, int(np.ceil(np.log2(2 * edges + 2))))
    keys = np.full(1 << bits, -1, np.int64)
    children = np.zeros(1 << bits, np.int32)
    token_ids = np.full(edges + 2, -1, np.int32)
    _build_trie(flat, offsets, np.array(roots, np.int64), ids, keys, children, token_ids,
                64 - bits)
    # What the kernel takes, in one tuple.
    self.arrays = _double_array(keys, children, token_ids)


def _double_array(keys, children, token_ids):
  """The trie as a double array, which walks a character with three reads:
  the character's code (its rank among the vocabulary's characters), the
  state's base, and the check that base + code is a child of the state.
  States 0 and 1 are the two roots."""
  used = keys >= 0
  parents = (keys[used] >> 21).astype(np.int64)
  cps = (keys[used] & 0x1FFFFF).astype(np.int64)
  kids = children[used].astype(np.int64)
  alphabet = np.unique(cps)
  code = np.zeros(_NUM_CODE_POINTS, np.int32)
  code[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.int32)
  edge_codes = code[cps].astype(np.int64)
  order = np.lexsort((edge_codes, parents))
  parents, edge_codes, kids = parents[order], edge_codes[order], kids[order]
  num_nodes = len(token_ids)
  first_edge = np.searchsorted(parents, np.arange(num_nodes + 1)).astype(np.int64)
  size = 2 * num_nodes + len(alphabet) + 16
  while True:
    base = np.zeros(size, np.int32)
    check = np.full(size, -1, np.int32)
    value = np.full(size, -1, np.int32)
    if _place_states(first_edge, edge_codes, kids, token_ids, base, check, value):
      return code, base, check, value
    size *= 2


@numba.njit(cache=True)
def _place_states(first_edge, edge_codes, kids, token_ids, base, check, value):
  """Gives each trie node a state (breadth first, each node's children at
  the first base where all their slots are free). False if out of room."""
  num_nodes = len(first_edge) - 1
  state = np.full(num_nodes, -1, np.int64)
  queue = np.empty(num_nodes, np.int64)
  state[0], state[1] = 0, 1
  check[0], check[1] = -2, -2  # Taken by the roots.
  queue[0], queue[1] = 0, 1
  head, tail = 0, 2
  next_free = 2
  size = len(check)
  while head < tail:
    node = queue[head]
    head += 1
    s = state[node]
    lo, hi = first_edge[node], first_edge[node + 1]
    if lo == hi:
      continue
    b = max(next_free - edge_codes[lo], 1)
    while True:
      if b + edge_codes[hi - 1] >= size:
        return False
      fits = True
      for e in range(lo, hi):
        if check[b + edge_codes[e]] != -1:
          fits = False
          break
      if fits:
        break
      b += 1
    base[s] = b
    for e in range(lo, hi):
      t = b + edge_codes[e]
      check[t] = s
      value[t] = token_ids[kids[e]]
      state[kids[e]] = t
      queue[tail] = kids[e]
      tail += 1
    while next_free < size and check[next_free] != -1:
      next_free += 1
  return True


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@_kernel(inline="always")
def _slot(key, shift):
  return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@numba.njit(cache=True)
def _build_trie(flat, offsets, roots, ids, keys, children, token_ids, shift):
  mask = len(keys) - 1
  nodes = 2
  for w in range(len(offsets) - 1):
    node = roots[w]
    for t in range(offsets[w], offsets[w + 1]):
      key = (np.int64(node) << 21) | flat[t]
      slot = _slot(key, shift)
      while keys[slot] != -1 and keys[slot] != key:
        slot = (slot + 1) & mask
      if keys[slot] == -1:
        keys[slot] = key
        children[slot] = nodes
        nodes += 1
      node = children[slot]
    if offsets[w + 1] > offsets[w]:
      token_ids[node] = ids[w]


@_kernel(inline="always")
def _is_final_sigma(word, n, i, flags):
  """CPython's rule: cased (case-ignorables between) before, and no cased
  (case-ignorables between) after."""
  j = i - 1
  while j >= 0 and flags[word[j]] & _IGNORABLE:
    j -= 1
  if j < 0 or not flags[word[j]] & _CASED:
    return False
  j = i + 1
  while j < n and flags[word[j]] & _IGNORABLE:
    j += 1
  return j == n or not flags[word[j]] & _CASED


@_kernel(inline="always")
def _wordpiece(piece, a, b, trie, unk_id, max_chars, out, n_out):
  """Appends the ids of piece[a:b] to out[n_out:]; returns the new length."""
  code, base, check, value = trie
  if b - a > max_chars:
    out[n_out] = unk_id
    return n_out + 1
  start = a
  first = n_out
  while start < b:
    state = 0 if start == a else 1
    best_end = -1
    best_id = -1
    t = start
    while t < b:
      c = code[piece[t]]
      if c == 0:
        break
      next_state = base[state] + c
      if next_state >= len(check) or check[next_state] != state:
        break
      state = next_state
      t += 1
      if value[state] >= 0:
        best_end = t
        best_id = value[state]
    if best_end < 0:
      out[first] = unk_id
      return first + 1
    out[n_out] = best_id
    n_out += 1
    start = best_end
  return n_out


@_kernel(cache=True)
def _emit_piece(piece, a, b, out, n_out):
  """Appends the code points of piece[a:b] and a space to out[n_out:]."""
  for t in range(a, b):
    out[n_out] = piece[t]
    n_out += 1
  out[n_out] = 32
  return n_out + 1


@_kernel(nogil=True, cache=True)
def _tokenize(cps, starts, do_lower_case, flags, lower_index, lower_offsets, lower_data,
              nfd_index, nfd_offsets, nfd_data, combining_class, trie, unk_id, max_chars,
              growth, out, row_lengths, word, lowered, pieces, emit_pieces):
  """Ids of texts cps[starts[i]:starts[i + 1]] into out; row_lengths[i] their
  count. Returns the number of ids, or -1 if `out` is too small. With
  `emit_pieces`, out gets instead the code points of each basic token (what
  WordPiece would be applied to), each followed by a space."""
  n_out = 0
  for row in range(len(starts) - 1):
    row_start = n_out
    i = starts[row]
    end = starts[row + 1]
    while i <= end:
      # Gather one word (cleaning as we go); a CJK ideograph is a word alone.
      n = 0
      seen = 0  # All code points of the word OR-ed: below 128 if ASCII.
      while i < end:
        cp = cps[i]
        f = flags[cp]
        if f & _DROP:
          i += 1
          continue
        if f & (_SPACE | _SPLIT):
          i += 1
          if n > 0:
            break
          continue
        if f & _CJK:
          if n > 0:
            break  # The ideograph starts the next word.
          word[0] = cp
          seen = cp
          n = 1
          i += 1
          break
        word[n] = cp
        seen |= cp
        n += 1
        i += 1
      if n == 0:
        if i >= end:
          break
        continue
      if len(out) - n_out < (2 if emit_pieces else 1) * growth * n + 8:
        return -1
      # Lower-case and strip accents into `pieces`, then split and look up.
      if do_lower_case and seen < 128:  # ASCII: A-Z only, nothing to strip.
        for k in range(n):
          cp = word[k]
          pieces[k] = cp + 32 if 65 <= cp <= 90 else cp
        q = n
      elif do_lower_case:
        m = 0
        ascii_only = True
        for k in range(n):
          cp = word[k]
          if cp == _CAPITAL_SIGMA:
            lowered[m] = 0x3C2 if _is_final_sigma(word, n, k, flags) else 0x3C3
            m += 1
          else:  # Mapped as the decomposition below, inline: a helper call is slower.
            mapped = lower_index[cp]
            if mapped >= 0:
              lowered[m] = mapped
              m += 1
            else:
              for t in range(lower_offsets[-mapped - 1], lower_offsets[-mapped]):
                lowered[m] = lower_data[t]
                m += 1
        for k in range(m):
          if lowered[k] >= 128:
            ascii_only = False
            break
        q = 0
        if ascii_only:
          for k in range(m):
            pieces[q] = lowered[k]
            q += 1
        else:
          for k in range(m):
            mapped = nfd_index[lowered[k]]
            if mapped >= 0:
              pieces[q] = mapped
              q += 1
            else:
              for t in range(nfd_offsets[-mapped - 1], nfd_offsets[-mapped]):
                pieces[q] = nfd_data[t]
                q += 1
          # Canonical order: a stable sort by class of each run of marks.
          k = 0
          while k < q:
            if combining_class[pieces[k]] == 0:
              k += 1
              continue
            run_end = k
            while run_end < q and combining_class[pieces[run_end]] != 0:
              run_end += 1
            for s in range(k + 1, run_end):
              value = pieces[s]
              c = combining_class[value]
              t = s - 1
              while t >= k and combining_class[pieces[t]] > c:
                pieces[t + 1] = pieces[t]
                t -= 1
              pieces[t + 1] = value
            k = run_end
          kept = 0
          for k in range(q):
            if not flags[pieces[k]] & _MARK:
              pieces[kept] = pieces[k]
              kept += 1
          q = kept
      else:
        for k in range(n):
          pieces[k] = word[k]
        q = n
      # Punctuation alone; whitespace made by the steps above splits too.
      a = 0
      for k in range(q + 1):
        boundary = k == q
        f = 0
        if not boundary:
          f = flags[pieces[k]]
          boundary = (f & (_PUNCT | _SPLIT)) != 0
        if boundary:
          if k > a:
            if emit_pieces:
              n_out = _emit_piece(pieces, a, k, out, n_out)
            else:
              n_out = _wordpiece(pieces, a, k, trie, unk_id, max_chars, out, n_out)
          if f & _PUNCT:
            if emit_pieces:
              n_out = _emit_piece(pieces, k, k + 1, out, n_out)
            else:
              n_out = _wordpiece(pieces, k, k + 1, trie, unk_id, max_chars, out, n_out)
          a = k + 1
    row_lengths[row] = n_out - row_start
  return n_out


class CompiledTokenizer(object):
  """FullTokenizer's ids for many texts at once (see the module docstring)."""

  def __init__(self, vocab, do_lower_case, unk_token="[UNK]", max_input_chars_per_word=200):
    self.tables = unicode_tables()
    self.trie = Trie(vocab)
    self.do_lower_case = bool(do_lower_case)
    self.unk_id = vocab[unk_token]
    self.max_chars = max_input_chars_per_word

  def _run(self, cps, starts, emit_pieces=False):
    t, trie = self.tables, self.trie
    row_lengths = np.zeros(len(starts) - 1, np.int64)
    capacity = 2 * len(cps) + 64
    longest = int(np.diff(starts).max(initial=0))
    word = np.empty(longest + 1, np.int32)
    lowered = np.empty(t.growth * longest + 8, np.int32)
    pieces = np.empty(t.growth * longest + 8, np.int32)
    while True:
      out = np.empty(capacity, np.int32)
      count = _tokenize(cps, starts, self.do_lower_case, t.flags, t.lower_index,
                        t.lower_offsets, t.lower_data, t.nfd_index, t.nfd_offsets,
                        t.nfd_data, t.combining_class, trie.arrays, self.unk_id,
                        self.max_chars, t.growth, out, row_lengths, word, lowered,
                        pieces, emit_pieces)
      if count >= 0:
        return out[:count], row_lengths
      capacity *= 4

  def basic_tokens_text(self, texts):
    """BasicTokenizer's tokens of every text (before WordPiece), in order, in
    one string, each followed by a space (a token holds no whitespace)."""
    cps, starts = _code_points(texts)
    flat, _ = self._run(cps, starts, emit_pieces=True)
    return flat.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")

  def tokenize_to_ids_batch(self, texts, num_threads=1):
    """(flat int32 ids, int64 row splits) for `texts` (str). With
    `num_threads` > 1, a batch of more than _MIN_PER_THREAD code points per
    thread is split over threads (the kernel runs without the GIL)."""
    cps, starts = _code_points(texts)
    num_threads = int(min(num_threads, len(cps) // _MIN_PER_THREAD, len(texts)))
    if num_threads <= 1:
      flat, row_lengths = self._run(cps, starts)
    else:
      # Split where the code points are shared evenly, at text boundaries.
      bounds = np.searchsorted(starts, np.linspace(0, len(cps), num_threads + 1)[1:-1])
      bounds = np.unique(np.concatenate([[0], bounds, [len(texts)]]))
      parts = list(_thread_pool(num_threads).map(
          lambda k: self._run(cps, starts[bounds[k]:bounds[k + 1] + 1]), range(len(bounds) - 1)))
      flat = np.concatenate([p[0] for p in parts])
      row_lengths = np.concatenate([p[1] for p in parts])
    splits = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(row_lengths, out=splits[1:])
    return flat, splits


def basic_tokenizer(do_lower_case):
  """A CompiledTokenizer for `basic_tokens_text` alone (it needs no
  vocabulary: WordPiece never runs)."""
  return CompiledTokenizer({"[UNK]": 0}, do_lower_case)


def _code_points(texts):
  """(uint32 code points of all texts, int64 start of each text and the end)."""
  lengths = np.fromiter(map(len, texts), np.int64, len(texts))
  starts = np.zeros(len(texts) + 1, np.int64)
  np.cumsum(lengths, out=starts[1:])
  return np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), np.uint32), starts


_MIN_PER_THREAD = 1 << 18  # Smaller batches run faster on one thread.
_pools = {}


def _thread_pool(num_threads):
  if num_threads not in _pools:
    _pools[num_threads] = concurrent.futures.ThreadPoolExecutor(
        num_threads, thread_name_prefix="wordpiece")
  return _pools[num_threads]
