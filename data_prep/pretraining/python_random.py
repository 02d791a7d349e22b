"""Python's `random.Random`, draw for draw, inside numba-compiled code.

The original data generator drives every decision from one `random.Random`.
To produce the same instances while running compiled, we need the same
stream: this is CPython's Mersenne Twister (MT19937) with CPython's
`random()`, `getrandbits()`, `_randbelow()`, `randint()` and `shuffle()`
on top. The state is a uint32 array of 625 words: the 624 state words and
the position, exactly what `random.Random.getstate()[1]` holds.
"""

import random

import numba
import numpy as np

_N = 624
_M = 397
_MATRIX_A = np.uint32(0x9908B0DF)
_UPPER_MASK = np.uint32(0x80000000)
_LOWER_MASK = np.uint32(0x7FFFFFFF)


def state_from_seed(seed):
  """The 625-word state CPython's random.Random(seed) starts from."""
  words = random.Random(seed).getstate()[1]
  return np.array(words, dtype=np.uint32)


def state_to_python(state):
  """A random.Random continuing from `state` (for handing the stream back)."""
  rng = random.Random()
  rng.setstate((3, tuple(int(w) for w in state), None))
  return rng


@numba.njit(cache=True)
def _twist(state):
  for kk in range(_N):
    y = (state[kk] & _UPPER_MASK) | (state[(kk + 1) % _N] & _LOWER_MASK)
    value = state[(kk + _M) % _N] ^ (y >> np.uint32(1))
    if y & np.uint32(1):
      value ^= _MATRIX_A
    state[kk] = value
  state[_N] = 0


@numba.njit(cache=True)
def genrand_uint32(state):
  if state[_N] >= _N:
    _twist(state)
  y = state[state[_N]]
  state[_N] += 1
  y ^= y >> np.uint32(11)
  y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
  y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
  y ^= y >> np.uint32(18)
  return y


@numba.njit(cache=True)
def random_float(state):
  """random.random(): 53 random bits from two draws."""
  a = genrand_uint32(state) >> np.uint32(5)
  b = genrand_uint32(state) >> np.uint32(6)
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True)
def randbelow(state, n):
  """random._randbelow(n) for 0 < n <= 2**32: rejection on n.bit_length() bits."""
  k = 0
  v = n
  while v:
    k += 1
    v >>= 1
  shift = np.uint32(32 - k)
  r = np.int64(genrand_uint32(state) >> shift)
  while r >= n:
    r = np.int64(genrand_uint32(state) >> shift)
  return r


@numba.njit(cache=True)
def randint(state, a, b):
  """random.randint(a, b), both ends included (requires a <= b)."""
  return a + randbelow(state, b - a + 1)


@numba.njit(cache=True)
def shuffle(state, x):
  """random.shuffle(x) in place, with the same swaps."""
  for i in range(len(x) - 1, 0, -1):
    j = randbelow(state, i + 1)
    tmp = x[i]
    x[i] = x[j]
    x[j] = tmp
