"""The version of the book and its package: the one number that releases change.

``make release VERSION=x.y.z`` (:mod:`seqbook.authoring.release`) rewrites it, with everything
that must agree with it: the package metadata reads it from here, and the set-up cells, the
citation file, the changelog and the website's footer are checked against it by the tests.
"""

__version__ = "0.1.0"
