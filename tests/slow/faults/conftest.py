"""Fixtures of the fault tests: the module's scratch database (migrated once), a `Stack` per test, and `orm`
to read and write the children's database from the test process."""
import contextlib

import pytest

from tests.scratch_database import default_database, migrated_database
from tests.slow.faults.stack import Stack


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The module's database, migrated once, and the data folder every child process shares."""
    data_dir = tmp_path_factory.mktemp("faults") / "data"
    data_dir.mkdir()
    with migrated_database(data_dir) as database:
        yield database


@pytest.fixture
def stack(scratch, tmp_path):
    stack = Stack(scratch, tmp_path)
    yield stack
    stack.close()
    print(stack.logs())  # shown when the test failed


@pytest.fixture
def orm(scratch, django_db_blocker):
    """`with orm():` the ORM and services of this process work on the children's database."""

    @contextlib.contextmanager
    def use():
        with django_db_blocker.unblock(), default_database(scratch):
            yield

    return use


