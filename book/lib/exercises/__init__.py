"""Exercise checkers, one module per chapter (``seqbook.exercises.ch01``, ...).

A checker takes whatever the student passes, prints a verdict with a hint, and returns a
:class:`Verdict` (true when the answer is right). It never lets an exception escape: a
student's function that raises, returns the wrong type or is still a stub gets a message.
"""

from .core import Verdict, checker

__all__ = ["Verdict", "checker"]
