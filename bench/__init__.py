"""Benchmarks of this project against the original and its peers.

`make bench` (python -m bench.run) runs the suite; every module here runs as
`python -m bench.<module>` from the repository's root (bench/README.md).
"""
