"""The pre-training data generator, stage by stage: text to a corpus of ids
(corpus.py), the original's instance algorithm, compiled (instances.py, with
python_random.py, Python's random stream), instances to records (records.py),
the whole run (generator.py), records back to tf.data (dataset.py), the same
as Beam steps (beam_pipeline.py), and warm_up.py, which compiles it at
installation.
"""
