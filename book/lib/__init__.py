"""seqbook: the shared library of *Sequence Models, from the Chain Rule to the Transformer*.

Every chapter imports its models, data, plots and exercise checkers from here, so the
text and the library cannot drift apart. Modules are small and named for one idea each:

- :mod:`seqbook.interfaces`   the contracts a model keeps (recurrent layer, language model, translator, ...)
- :mod:`seqbook.checks`       argument checks: TypeError for a wrong type or dtype, ValueError for a wrong value
- :mod:`seqbook.seeding`      reproducible randomness (``seed_everything``, ``generator``, ``seeded``)
- :mod:`seqbook.device`       picking CUDA or CPU once
- :mod:`seqbook.progress`     a progress bar for notebooks and terminals
- :mod:`seqbook.vocab`        token <-> id mapping for characters and words
- :mod:`seqbook.corpus`       real English text that ships with Python, and splits
- :mod:`seqbook.synthetic`    a seeded source with a known entropy rate and a long-range dependency
- :mod:`seqbook.ngram`        n-gram language models with add-alpha smoothing
- :mod:`seqbook.rnn`          a recurrent layer from its equations (RNNScratch)
- :mod:`seqbook.gradients`    gradient norms through time; the recurrent matrix's scale
- :mod:`seqbook.lm`           a language model around any left-to-right recurrent layer
- :mod:`seqbook.training`     the LM trainer: clipping, truncated BPTT, perplexity; the History of a run
- :mod:`seqbook.gated`        the LSTM and GRU from their equations (equal to PyTorch's), gate-bias helpers
- :mod:`seqbook.diagrams`     the LSTM and GRU cell diagrams of chapter 3
- :mod:`seqbook.long_lag`     the adding problem (Hochreiter & Schmidhuber 1997, experiment 4)
- :mod:`seqbook.bidirectional` bidirectional and stacked layers, and the "negation comes later" task
- :mod:`seqbook.translation`  an English->French grammar with gold alignments; vocabularies, batches, TSV files
- :mod:`seqbook.translator`   what every translator shares: stepwise decoding, masked loss, training, BLEU
- :mod:`seqbook.seq2seq`      chapter 4's encoder-decoder (GRU/LSTM, optional source reversal)
- :mod:`seqbook.decoding`     greedy search, beam search and sampling over any next-token scorer
- :mod:`seqbook.bleu`         BLEU: modified n-gram precision, brevity penalty, corpus level
- :mod:`seqbook.attention`    masked softmax, additive/dot/general/concat scores, the attention step
- :mod:`seqbook.attention_model` chapter 5's bidirectional encoder and attention decoders
- :mod:`seqbook.alignment`    word alignments from attention, and the alignment error rate
- :mod:`seqbook.multihead`    scaled dot-product and multi-head attention, masks
- :mod:`seqbook.positions`    sinusoidal, learned and no position encodings
- :mod:`seqbook.transformer`  the Transformer's layers and the encoder-decoder of chapter 6
- :mod:`seqbook.plotting`     heatmaps, loss curves, animations for the website
- :mod:`seqbook.interactive`  a widget in a live kernel, a static twin elsewhere
- :mod:`seqbook.exercises`    checkers for the exercises of every chapter
- :mod:`seqbook.authoring`    tools for the book's authors (student edition, benchmark, screenshots)
"""

from ._version import __version__  # noqa: F401  (one place: make release rewrites it)
