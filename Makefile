# Two entry points: `make demo` (end-to-end run on the bundled corpus) and
# `make test`. Both create .venv and install requirements.txt on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt | cksum | cut -d' ' -f1)

# The demo's inputs; point DEMO_CORPUS at your own text (one sentence per
# line, blank line between documents) to run the same pipeline on it.
DEMO_DIR ?= demo_output
DEMO_CORPUS ?= $(DEMO_DIR)/corpus.txt
DEMO_VOCAB_SIZE ?= 8000

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: install test demo bench clean

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q tests

$(DEMO_DIR)/corpus.txt: | $(STAMP)
	mkdir -p $(DEMO_DIR)
	$(PY) -m data_prep.demo_corpus --output_file=$@

demo: $(STAMP) $(DEMO_CORPUS)
	$(PY) -m vocab.learn_vocab --input_file=$(DEMO_CORPUS) \
	  --output_file=$(DEMO_DIR)/vocab.txt --vocab_size=$(DEMO_VOCAB_SIZE)
	$(PY) -m data_prep.create_pretraining_data --input_file=$(DEMO_CORPUS) \
	  --output_file=$(DEMO_DIR)/pretraining_data.tfrecord \
	  --vocab_file=$(DEMO_DIR)/vocab.txt --do_lower_case=True \
	  --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5
	@echo "Demo outputs are in $(DEMO_DIR)/"

bench: $(STAMP)
	$(PY) -m pip install -q -r bench/requirements.txt
	$(PY) bench/bench_tokenizer.py
	$(PY) bench/bench_create_pretraining_data.py

clean:
	rm -rf $(DEMO_DIR) bench/output
