"""Plumbing every stage uses, importing nothing else of ours (nor TensorFlow,
until a remote path or tf.data needs it).

errors (UserError) and cli (one-line errors instead of tracebacks);
files (outputs written whole or not at all); text_io (reading text as the
original did); tfrecord (compiled TFRecord framing and writers); tf_example
(the one tf.train.Example encoder, decoder and record reader); beam_options.
"""
