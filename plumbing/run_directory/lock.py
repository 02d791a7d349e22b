"""One training run per output directory.

Two runs training into one --output_dir would write the same `ckpt-N` files
and each resume from the other's checkpoints. The first run holds an
advisory lock (flock) on `<output_dir>/.run.lock` while it trains; a second
one refuses with one line naming the holder. The kernel drops the lock when
its process ends, however it ends (SIGKILL, a crash, a lost machine on a
local disk), so a dead run never leaves the directory locked. Remote
directories (gs://, ...) have no such lock and are not locked.
"""

import contextlib
import datetime
import fcntl
import json
import os
import socket

from absl import logging

from plumbing import files
from plumbing.errors import UserError

LOCK_NAME = ".run.lock"


@contextlib.contextmanager
def hold(output_dir):
  """Holds `output_dir` for this process within the block; a UserError if
  another live process holds it."""
  if files.is_remote(output_dir):
    logging.info("%s is remote: not locked against a second run.", output_dir)
    yield
    return
  path = os.path.join(output_dir, LOCK_NAME)
  with open(path, "a+", encoding="utf-8") as lock:
    try:
      fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      lock.seek(0)
      holder = lock.read().strip() or "unknown process"
      raise UserError(
          "--output_dir=%s is in use by another training run (%s; lock file %s). Wait for "
          "it to finish or stop it, or train into another --output_dir." %
          (output_dir, holder, path)) from None
    lock.seek(0)
    lock.truncate()
    lock.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                           "since": datetime.datetime.now().isoformat(timespec="seconds")}))
    lock.flush()
    try:
      yield
    finally:
      fcntl.flock(lock, fcntl.LOCK_UN)
