"""Tools for the people who write and teach from the book (not used by the chapters):
the notebooks' set-up cell, the student edition, the benchmark and the page screenshots."""
