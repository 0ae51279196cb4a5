"""seqbook: the shared library of *Sequence Models, from the Chain Rule to the Transformer*.

Every chapter imports its models, data, plots and exercise checkers from here, so the
text and the library cannot drift apart. Modules are small and named for one idea each:

- :mod:`seqbook.seeding`      reproducible randomness (``seed_everything``, ``generator``)
- :mod:`seqbook.device`       picking CUDA or CPU once
- :mod:`seqbook.progress`     a progress bar for notebooks and terminals
- :mod:`seqbook.vocab`        token <-> id mapping for characters and words
- :mod:`seqbook.corpus`       real English text that ships with Python, and splits
- :mod:`seqbook.synthetic`    a seeded source with a known entropy rate and a long-range dependency
- :mod:`seqbook.ngram`        n-gram language models with add-alpha smoothing
- :mod:`seqbook.rnn`          a recurrent layer from its equations (RNNScratch)
- :mod:`seqbook.gradients`    gradient norms through time; the recurrent matrix's scale
- :mod:`seqbook.lm`           a language model around any recurrent layer; sampling
- :mod:`seqbook.training`     the LM trainer: clipping, truncated BPTT, perplexity
- :mod:`seqbook.gated`        the LSTM and GRU from their equations (equal to PyTorch's), gate-bias helpers
- :mod:`seqbook.long_lag`     the adding problem (Hochreiter & Schmidhuber 1997, experiment 4)
- :mod:`seqbook.bidirectional` bidirectional and stacked layers, and the "negation comes later" task
- :mod:`seqbook.transformer`  the Transformer (attention: :mod:`seqbook.multihead`; positions: :mod:`seqbook.positions`)
- :mod:`seqbook.translation`  an English->French grammar with gold alignments; vocabularies, batches, TSV files
- :mod:`seqbook.seq2seq`      the encoder-decoder (GRU/LSTM), masked loss, teacher forcing, batched translation
- :mod:`seqbook.decoding`     greedy and beam search over any next-token scorer
- :mod:`seqbook.bleu`         BLEU: modified n-gram precision, brevity penalty, corpus level
- :mod:`seqbook.attention`    masked softmax, additive/dot/general/concat scores; the attention model (:mod:`seqbook.attention_model`), AER (:mod:`seqbook.alignment`)
- :mod:`seqbook.plotting`     heatmaps, loss curves, animations for the website
- :mod:`seqbook.interactive`  a widget in a live kernel, a static twin elsewhere
- :mod:`seqbook.exercises`    checkers for the exercises of every chapter
"""

from ._version import __version__  # noqa: F401  (one place: make release rewrites it)
