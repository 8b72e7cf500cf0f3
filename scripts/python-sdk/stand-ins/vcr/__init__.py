"""No-op stand-in for vcrpy (not on the package index).

The suites' conftest records calls to model providers with it, never calls to the service under test,
so a cassette that records and replays nothing changes nothing here.
"""

import contextlib

from . import patch  # noqa: F401  (conftest patches vcr.patch.ConnectionRemover)


class VCR:
    def __init__(self, *args, **kwargs):
        self.match_on = kwargs.get("match_on")

    def register_matcher(self, name, matcher):
        pass

    @contextlib.contextmanager
    def use_cassette(self, *args, **kwargs):
        yield None
