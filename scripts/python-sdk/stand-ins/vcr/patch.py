"""The part of vcr.patch the suites' conftest touches (it replaces ConnectionRemover.__exit__)."""


class ConnectionRemover:
    def __exit__(self, *args):
        pass


class CassettePatcherBuilder:
    pass
